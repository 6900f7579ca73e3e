import { sameHash } from "./keys.ts";
import type { KnownKey } from "./store/types.ts";

interface Entry {
  key: KnownKey;
  at: number;
}

/**
 * What Authorize knows about keys when Redis is unreachable: valid key hashes → {key,
 * account, status}. Reloaded from Redis periodically and updated by every successful
 * Authorize and every admin change made on this replica, so it is at most one refresh
 * interval behind changes made elsewhere.
 */
/**
 * Refusals remembered while a full load may be running. Callers choose what they send as
 * keys, so the marks are bounded: past this, a revoked key can at worst stay in the
 * snapshot until the next refresh (it only serves during a Redis outage).
 */
const MAX_FORGOTTEN = 10_000;

export class KeySnapshot {
  #byHash = new Map<string, Entry>();
  readonly #forgotten = new Map<string, number>();
  #seq = 0;

  get size(): number {
    return this.#byHash.size;
  }

  /** A marker to pass to `replace` when a full load starts. */
  mark(): number {
    // Marks older than the load that starts now can never veto its keys.
    this.#forgotten.clear();
    return ++this.#seq;
  }

  lookup(hash: Buffer): KnownKey | undefined {
    const entry = this.#byHash.get(hash.toString("hex"));
    return entry && sameHash(entry.key.hash, hash) ? entry.key : undefined;
  }

  remember(key: KnownKey): void {
    const hex = key.hash.toString("hex");
    this.#forgotten.delete(hex);
    this.#byHash.set(hex, { key, at: ++this.#seq });
  }

  forget(hash: Buffer): void {
    const hex = hash.toString("hex");
    this.#byHash.delete(hex);
    if (this.#forgotten.size < MAX_FORGOTTEN || this.#forgotten.has(hex))
      this.#forgotten.set(hex, ++this.#seq);
    else ++this.#seq;
  }

  forgetKey(keyId: string): void {
    for (const entry of this.#byHash.values()) if (entry.key.keyId === keyId) this.forget(entry.key.hash);
  }

  setAccountStatus(accountId: string, status: string): void {
    for (const entry of this.#byHash.values()) {
      if (entry.key.accountId === accountId) entry.key = { ...entry.key, status };
    }
  }

  /**
   * Replaces the contents with a full load that started at `since`, keeping what this
   * replica learned while the load was running (it may be newer than the load).
   */
  replace(keys: KnownKey[], since: number): void {
    const next = new Map<string, Entry>();
    for (const key of keys) {
      const hex = key.hash.toString("hex");
      if ((this.#forgotten.get(hex) ?? 0) > since) continue;
      next.set(hex, { key, at: since });
    }
    for (const [hex, entry] of this.#byHash) if (entry.at > since) next.set(hex, entry);
    this.#byHash = next;
    this.#forgotten.clear();
  }
}
