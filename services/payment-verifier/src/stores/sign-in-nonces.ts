// The nonces of sign-in-with-x proofs already accepted, shared by every replica: a proof is served
// once, whichever replica it reaches. Only proofs whose signature was verified are recorded, each
// for as long as it could still pass the time checks (minutes), so what an attacker can make us
// store is bounded by the attempt limits times that window; a refused proof stores nothing.
import type { Redis } from "@tollgate/platform";

/**
 * `fresh`: recorded now, for `holder`; `again`: recorded before for the same holder (a VerifySignIn
 * whose answer was lost, sent again for the same request); `used`: another holder used it.
 */
export type NonceUse = "fresh" | "again" | "used";

export interface SignInNonceStore {
  readonly kind: "redis" | "memory";
  /** Records `nonce` as used by `holder` (the mesh's request id) for `ttlMs`, unless it was used. */
  use(nonce: string, holder: string, ttlMs: number): Promise<NonceUse>;
  close(): void;
}

export class RedisSignInNonceStore implements SignInNonceStore {
  readonly kind = "redis" as const;
  readonly #redis: Redis;
  readonly #prefix: string;

  /** `prefix`: payment-verifier's (`<REDIS_PREFIX>payment:`). */
  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = `${prefix}siwx-nonce:`;
  }

  async use(nonce: string, holder: string, ttlMs: number): Promise<NonceUse> {
    const key = this.#prefix + nonce;
    const set = await this.#redis.set(key, holder, {
      condition: "NX",
      expiration: { type: "PX", value: Math.max(1, Math.ceil(ttlMs)) },
    });
    if (set !== null) return "fresh";
    // Only a replay (or a retried call) pays this second round trip.
    return (await this.#redis.get(key)) === holder ? "again" : "used";
  }

  close(): void {}
}

/** The most nonces the single-node stand-in keeps; past it, proofs are refused until some expire. */
const MEMORY_MAX = 100_000;

/** Single-node stand-in (REDIS_STANDIN): the same rule in this process, bounded. */
export class MemorySignInNonceStore implements SignInNonceStore {
  readonly kind = "memory" as const;
  readonly #used = new Map<string, { holder: string; until: number }>();
  readonly #sweeper: NodeJS.Timeout;
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
    this.#sweeper = setInterval(() => this.#sweep(), 10_000);
    this.#sweeper.unref();
  }

  #sweep(): void {
    const now = this.#now();
    for (const [nonce, entry] of this.#used) if (entry.until <= now) this.#used.delete(nonce);
  }

  async use(nonce: string, holder: string, ttlMs: number): Promise<NonceUse> {
    const now = this.#now();
    const entry = this.#used.get(nonce);
    if (entry && entry.until > now) return entry.holder === holder ? "again" : "used";
    if (this.#used.size >= MEMORY_MAX) this.#sweep();
    // Forgetting a live nonce would let its proof be served again: refuse instead (an outage).
    if (this.#used.size >= MEMORY_MAX) throw new Error("the sign-in nonce stand-in is full");
    this.#used.set(nonce, { holder, until: now + ttlMs });
    return "fresh";
  }

  close(): void {
    clearInterval(this.#sweeper);
    this.#used.clear();
  }
}
