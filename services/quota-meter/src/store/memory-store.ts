import { sameHash } from "../keys.ts";
import type { Windows } from "../windows.ts";
import {
  type AccountRecord,
  AUTHORIZATION_MEMORY_MS,
  type AuthorizeOutcome,
  type AuthorizeQuery,
  type DailyUsage,
  type KeyRecord,
  type LeaseReturn,
  type QuotaStore,
  type Refund,
  type UsageOutcome,
  type UsageQuery,
  type UsageTotal,
  type WindowCount,
} from "./types.ts";

/** What a refusal for an unknown key carries (nothing about any account). */
const NO_KEY = {
  decision: "invalid_key",
  keyId: "",
  accountId: "",
  storedHash: undefined,
  dayUsed: 0,
  monthUsed: 0,
  dayLimit: 0,
  monthLimit: 0,
  units: 0,
} as const;

interface Counter {
  value: number;
  expiresAt: number;
}

/**
 * The single-node stand-in used when Redis is unreachable at startup (the embedded
 * default on a machine without Redis). Same semantics as the Redis store, decided in
 * one synchronous step, so it is atomic too; nothing is shared between processes and
 * nothing survives a restart. Each method is the twin of a Lua script (#lookup and
 * #burstAllows of guard.lua); test/quota-meter/store-contract.test.ts runs one suite
 * against both stores.
 */
export class MemoryStore implements QuotaStore {
  readonly kind = "memory";
  readonly #accounts = new Map<string, AccountRecord>();
  readonly #keys = new Map<string, KeyRecord & { hash: Buffer }>();
  /** Live keys by hash (hex). */
  readonly #byHash = new Map<string, string>();
  readonly #counters = new Map<string, Counter>();
  /** Burst guard state (GCRA theoretical arrival time) per account. */
  readonly #tat = new Map<string, number>();
  readonly #seen = new Map<string, number>();
  readonly #usage = new Map<string, DailyUsage>();
  /** authorize.lua's `ag:` records: what each authorization id granted, for release(). */
  readonly #grants = new Map<string, { lease: LeaseReturn; expiresAt: number }>();
  #sweeps = 0;
  #mark: string | null = null;
  #held = false;
  readonly #clock: () => number;

  constructor(clock: () => number = Date.now) {
    this.#clock = clock;
  }

  isReady(): boolean {
    return !this.#held;
  }

  #get(key: string, now: number): number {
    const c = this.#counters.get(key);
    if (!c) return 0;
    if (c.expiresAt <= now) {
      this.#counters.delete(key);
      return 0;
    }
    return c.value;
  }

  #incr(key: string, now: number, ttlMs: number, by = 1): number {
    const value = this.#get(key, now) + by;
    const existing = this.#counters.get(key);
    this.#counters.set(key, { value, expiresAt: existing && value > by ? existing.expiresAt : now + ttlMs });
    return value;
  }

  /** Once-only marks (refunds) with a lifetime; swept now and then. */
  #firstTime(id: string, ttlMs: number): boolean {
    const now = this.#clock();
    if ((this.#seen.get(id) ?? 0) > now) return false;
    this.#seen.set(id, now + ttlMs);
    this.#sweepNowAndThen(now);
    return true;
  }

  #sweepNowAndThen(now: number): void {
    if (++this.#sweeps % 10_000 !== 0) return;
    for (const [k, exp] of this.#seen) if (exp <= now) this.#seen.delete(k);
    for (const [k, c] of this.#counters) if (c.expiresAt <= now) this.#counters.delete(k);
    for (const [k, g] of this.#grants) if (g.expiresAt <= now) this.#grants.delete(k);
  }

  /** guard.lua's lookup: the live key behind a hash and its account. */
  #lookup(hash: Buffer): { key: KeyRecord & { hash: Buffer }; account: AccountRecord } | undefined {
    const keyId = this.#byHash.get(hash.toString("hex"));
    const key = keyId ? this.#keys.get(keyId) : undefined;
    const account = key ? this.#accounts.get(key.accountId) : undefined;
    if (!key || !account || key.revokedAt || !sameHash(key.hash, hash)) return undefined;
    return { key, account };
  }

  /** guard.lua's burstGrant: GCRA per account; grants up to `want` units (recorded), 0 = refused. */
  #burstGrant(account: AccountRecord, defaultBurst: number, now: number, want: number): number {
    const burst = account.burstPerSecond > 0 ? account.burstPerSecond : defaultBurst;
    if (burst <= 0) return want;
    const tat = Math.max(this.#tat.get(account.id) ?? now, now);
    const interval = 1000 / burst;
    const granted = Math.min(want, Math.floor((now + 1000 - tat) / interval + 1e-9));
    if (granted < 1) return 0;
    this.#tat.set(account.id, tat + granted * interval);
    return granted;
  }

  #burstAllows(account: AccountRecord, defaultBurst: number, now: number): boolean {
    return this.#burstGrant(account, defaultBurst, now, 1) === 1;
  }

  async authorize(q: AuthorizeQuery): Promise<AuthorizeOutcome> {
    const none: AuthorizeOutcome = { ...NO_KEY, status: "" };
    if (q.authorizationId && (this.#seen.get(`ax:${q.authorizationId}`) ?? 0) > this.#clock()) {
      return { ...none, decision: "released" };
    }
    const found = this.#lookup(q.keyHash);
    if (!found) return none;
    const { key, account } = found;
    const base = { keyId: key.id, accountId: account.id, status: account.status, storedHash: key.hash };
    if (account.status !== "active") return { ...none, ...base, decision: "subscription_inactive" };

    const now = q.nowMs;
    const dk = `d:${account.id}:${q.windows.day}`;
    const mk = `m:${account.id}:${q.windows.month}`;
    const counts = {
      dayUsed: this.#get(dk, now),
      monthUsed: this.#get(mk, now),
      dayLimit: account.dailyLimit,
      monthLimit: account.monthlyLimit,
    };
    // authorize.lua's order: the windows clip the lease (to a quarter of what each has left)
    // before the guard takes tokens.
    let want = Math.max(1, Math.floor(q.units));
    if (counts.monthLimit > 0) want = Math.min(want, Math.ceil((counts.monthLimit - counts.monthUsed) / 4));
    if (counts.dayLimit > 0) want = Math.min(want, Math.ceil((counts.dayLimit - counts.dayUsed) / 4));
    const units = this.#burstGrant(account, q.defaultBurst, now, Math.max(want, 1));
    if (units < 1) return { ...base, ...counts, units: 0, decision: "rate_limited" };
    if (counts.monthLimit > 0 && counts.monthUsed >= counts.monthLimit) {
      return { ...base, ...counts, units: 0, decision: "monthly_limit_exceeded" };
    }
    if (counts.dayLimit > 0 && counts.dayUsed >= counts.dayLimit) {
      return { ...base, ...counts, units: 0, decision: "daily_limit_exceeded" };
    }
    counts.dayUsed = this.#incr(dk, now, q.windows.dayTtlMs, units);
    counts.monthUsed = this.#incr(mk, now, q.windows.monthTtlMs, units);
    if (q.authorizationId) {
      const lease = {
        leaseId: q.authorizationId,
        accountId: account.id,
        day: q.windows.day,
        month: q.windows.month,
        units,
      };
      const t = this.#clock();
      this.#grants.set(q.authorizationId, { lease, expiresAt: t + AUTHORIZATION_MEMORY_MS });
      this.#sweepNowAndThen(t);
    }
    return { ...base, ...counts, units, decision: "allow" };
  }

  /** release.lua's twin. */
  async release(authorizationId: string, dedupeTtlMs: number): Promise<boolean> {
    if (!this.#firstTime(`ax:${authorizationId}`, AUTHORIZATION_MEMORY_MS)) return false;
    const grant = this.#grants.get(authorizationId);
    this.#grants.delete(authorizationId);
    if (grant && grant.expiresAt > this.#clock()) await this.returnLease(grant.lease, dedupeTtlMs);
    return true;
  }

  async returnLease(l: LeaseReturn, dedupeTtlMs: number): Promise<boolean> {
    if (!this.#firstTime(`lr:${l.accountId}:${l.leaseId}`, dedupeTtlMs)) return false;
    for (const key of [`d:${l.accountId}:${l.day}`, `m:${l.accountId}:${l.month}`]) {
      const c = this.#counters.get(key);
      if (c && c.value > 0) c.value -= Math.min(c.value, l.units);
    }
    return true;
  }

  async refund(r: Refund, dedupeTtlMs: number): Promise<boolean> {
    if (!this.#firstTime(`rf:${r.accountId}:${r.requestId}`, dedupeTtlMs)) return false;
    for (const key of [`d:${r.accountId}:${r.day}`, `m:${r.accountId}:${r.month}`]) {
      const c = this.#counters.get(key);
      if (c && c.value > 0) c.value--;
    }
    return true;
  }

  async createAccount(a: AccountRecord): Promise<void> {
    this.#accounts.set(a.id, { ...a });
  }

  async createKey(k: KeyRecord, hash: Buffer): Promise<boolean> {
    if (!this.#accounts.has(k.accountId)) return false;
    this.#keys.set(k.id, { ...k, hash });
    this.#byHash.set(hash.toString("hex"), k.id);
    return true;
  }

  async revokeKey(accountId: string, keyId: string, at: string): Promise<KeyRecord | undefined> {
    const key = this.#keys.get(keyId);
    if (!key || key.accountId !== accountId) return undefined;
    if (!key.revokedAt) {
      key.revokedAt = at;
      this.#byHash.delete(key.hash.toString("hex"));
    }
    const { hash: _hash, ...record } = key;
    return record;
  }

  /** usage-max.lua's twin. */
  async mergeUsage(totals: UsageTotal[]): Promise<void> {
    for (const t of totals) {
      const k = `${t.accountId}:${t.day}`;
      const day = this.#usage.get(k) ?? { day: t.day, requests: 0, errors: 0 };
      day.requests = Math.max(day.requests, t.requests);
      day.errors = Math.max(day.errors, t.errors);
      this.#usage.set(k, day);
    }
  }

  // One process holds this store: it is seeded once at start and never lost while it runs.
  async seedMark(): Promise<string | null> {
    return this.#mark;
  }

  async setSeedMark(mark: string): Promise<void> {
    this.#mark = mark;
  }

  async lockSeeding(): Promise<boolean> {
    return true;
  }

  async unlockSeeding(): Promise<void> {}

  hold(held: boolean): void {
    this.#held = held;
  }

  onConnect(): void {}

  async restoreWindows(counts: WindowCount[]): Promise<void> {
    const now = this.#clock();
    for (const c of counts) {
      const key = `${c.kind === "day" ? "d" : "m"}:${c.accountId}:${c.window}`;
      if (this.#get(key, now) === 0) this.#counters.set(key, { value: c.count, expiresAt: now + c.ttlMs });
    }
  }

  async readUsage(q: UsageQuery): Promise<UsageOutcome> {
    const none: UsageOutcome = { ...NO_KEY, days: [] };
    const found = this.#lookup(q.keyHash);
    if (!found) return none;
    const { key, account } = found;
    const base = { ...none, keyId: key.id, accountId: account.id, storedHash: key.hash };
    if (account.status !== "active") return { ...base, decision: "subscription_inactive" };
    if (!this.#burstAllows(account, q.defaultBurst, q.nowMs)) return { ...base, decision: "rate_limited" };
    return {
      ...base,
      decision: "allow",
      days: q.days.map((day) => ({
        ...(this.#usage.get(`${account.id}:${day}`) ?? { day, requests: 0, errors: 0 }),
      })),
      dayUsed: this.#get(`d:${account.id}:${q.windows.day}`, q.nowMs),
      monthUsed: this.#get(`m:${account.id}:${q.windows.month}`, q.nowMs),
      dayLimit: account.dailyLimit,
      monthLimit: account.monthlyLimit,
    };
  }

  async readWindows(
    accountId: string,
    w: Windows,
    nowMs: number,
  ): Promise<{ dayUsed: number; monthUsed: number }> {
    return {
      dayUsed: this.#get(`d:${accountId}:${w.day}`, nowMs),
      monthUsed: this.#get(`m:${accountId}:${w.month}`, nowMs),
    };
  }

  async close(): Promise<void> {}
}
