import { sameHash } from "../keys.ts";
import type { Windows } from "../windows.ts";
import {
  type AccountRecord,
  AUTHORIZATION_MEMORY_MS,
  type AuthorizeOutcome,
  type AuthorizeQuery,
  CopyNotReady,
  type CreditEntry,
  type CreditLeaseUse,
  type DailyUsage,
  type Decision,
  type KeyRecord,
  type LeaseReturn,
  type OpenCreditLease,
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
/** What an Authorize of `q` granted `accountId`, as a release gives it back (authorize.lua's `ag:`). */
function leaseOf(q: AuthorizeQuery, accountId: string, units: number): LeaseReturn {
  return { leaseId: q.authorizationId, accountId, day: q.windows.day, month: q.windows.month, units };
}

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
  readonly #grants = new Map<
    string,
    { lease: LeaseReturn; credits?: { drawn: number; epoch: string }; expiresAt: number }
  >();
  /** Credit balances (`c:`) and the wallets bound to accounts (`wallets`). */
  readonly #credits = new Map<string, number>();
  /** Open credit leases (`cl:` with `cls`), and settled ones a late use or refund may name (`clx:`). */
  readonly #creditLeases = new Map<
    string,
    { accountId: string; amount: number; epoch: string; used: number; settleAt: number }
  >();
  readonly #settledLeases = new Map<string, { accountId: string; epoch: string; expiresAt: number }>();
  readonly #wallets = new Map<string, string>();
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
    for (const [k, x] of this.#settledLeases) if (x.expiresAt <= now) this.#settledLeases.delete(k);
  }

  /** guard.lua's lookup: the live key behind a hash and its account. */
  #lookup(hash: Buffer): { key: KeyRecord & { hash: Buffer }; account: AccountRecord } | undefined {
    const keyId = this.#byHash.get(hash.toString("hex"));
    const key = keyId ? this.#keys.get(keyId) : undefined;
    const account = key ? this.#accounts.get(key.accountId) : undefined;
    if (!key || !account || key.revokedAt || !sameHash(key.hash, hash)) return undefined;
    return { key, account };
  }

  /** guard.lua's burstGrant: GCRA per account; grants up to `want` units (recorded), 0 = refused (fewer than `least`). */
  #burstGrant(account: AccountRecord, defaultBurst: number, now: number, want: number, least = 1): number {
    const burst = account.burstPerSecond > 0 ? account.burstPerSecond : defaultBurst;
    if (burst <= 0) return want;
    const tat = Math.max(this.#tat.get(account.id) ?? now, now);
    const interval = 1000 / burst;
    const granted = Math.min(want, Math.floor((now + 1000 - tat) / interval + 1e-9));
    if (granted < least) return 0;
    this.#tat.set(account.id, tat + granted * interval);
    return granted;
  }

  #burstAllows(account: AccountRecord, defaultBurst: number, now: number): boolean {
    return this.#burstGrant(account, defaultBurst, now, 1) === 1;
  }

  /** guard.lua's activeWallet lookup: the account bound to a wallet. */
  #walletAccount(wallet: string): AccountRecord | undefined {
    const id = this.#wallets.get(wallet);
    return id === undefined ? undefined : this.#accounts.get(id);
  }

  #remember(id: string, grant: { lease: LeaseReturn; credits?: { drawn: number; epoch: string } }): void {
    if (!id) return;
    const t = this.#clock();
    this.#grants.set(id, { ...grant, expiresAt: t + AUTHORIZATION_MEMORY_MS });
    this.#sweepNowAndThen(t);
  }

  async authorize(q: AuthorizeQuery): Promise<AuthorizeOutcome> {
    const none: AuthorizeOutcome = { ...NO_KEY, status: "" };
    if (q.closeCreditLease)
      await this.returnCreditLease(q.closeCreditLease.leaseId, q.closeCreditLease.creditsLeft);
    if (q.authorizationId && (this.#seen.get(`ax:${q.authorizationId}`) ?? 0) > this.#clock()) {
      return { ...none, decision: "released" };
    }
    let account: AccountRecord | undefined;
    let key: { id: string; hash: Buffer | undefined };
    if (q.wallet) {
      account = this.#walletAccount(q.wallet);
      if (!account) return { ...none, decision: "no_account" };
      key = { id: "", hash: undefined };
    } else {
      const found = this.#lookup(q.keyHash);
      if (!found) return none;
      ({ key, account } = found);
    }
    const base = { keyId: key.id, accountId: account.id, status: account.status, storedHash: key.hash };
    if (account.status !== "active") return { ...none, ...base, decision: "subscription_inactive" };

    const now = q.nowMs;
    const calls = Math.max(1, Math.floor(q.calls));
    const wanted = Math.max(calls, Math.floor(q.units));
    const dk = `d:${account.id}:${q.windows.day}`;
    const mk = `m:${account.id}:${q.windows.month}`;
    const counts = {
      dayUsed: this.#get(dk, now),
      monthUsed: this.#get(mk, now),
      dayLimit: account.dailyLimit,
      monthLimit: account.monthlyLimit,
    };
    // authorize.lua's fromCredits: a credit lease when the credits cover the call, else `refusal`.
    const fromCredits = (refusal: Decision): AuthorizeOutcome => {
      const balance = this.#credits.get(account.id) ?? 0;
      const price = q.priceAtomic;
      if (price <= 0 || balance < price) {
        return { ...base, ...counts, units: 0, decision: refusal, balance };
      }
      // A batch draws its own price only.
      let units = calls > 1 ? 1 : Math.min(wanted, Math.max(1, Math.floor(balance / price / 4)));
      if (units > 1) units = 1 + this.#burstGrant(account, q.defaultBurst, now, units - 1);
      const amount = units * price;
      const remaining = balance - amount;
      this.#credits.set(account.id, remaining);
      const epoch = this.#mark ?? "";
      const credits = { drawn: amount, remaining, epoch };
      if (q.authorizationId) {
        this.#remember(q.authorizationId, { lease: leaseOf(q, account.id, 0), credits });
        this.#creditLeases.set(q.authorizationId, {
          accountId: account.id,
          amount,
          epoch,
          used: 0,
          settleAt: q.creditLeaseSettleAt,
        });
      }
      return { ...base, ...counts, units, decision: "allow", credits };
    };
    if (account.creditsOnly) {
      // No plan windows apply: the answer carries no window values (no X-Quota-* headers).
      counts.dayLimit = 0;
      counts.monthLimit = 0;
      if (this.#burstGrant(account, q.defaultBurst, now, calls, calls) < 1) {
        return { ...base, ...counts, units: 0, decision: "rate_limited" };
      }
      return fromCredits("no_credits");
    }
    // authorize.lua's order: the windows clip the lease (to a quarter of what each has left)
    // before the guard takes tokens.
    let want = wanted;
    if (counts.monthLimit > 0) want = Math.min(want, Math.ceil((counts.monthLimit - counts.monthUsed) / 4));
    if (counts.dayLimit > 0) want = Math.min(want, Math.ceil((counts.dayLimit - counts.dayUsed) / 4));
    const units = this.#burstGrant(account, q.defaultBurst, now, Math.max(want, calls), calls);
    if (units < 1) return { ...base, ...counts, units: 0, decision: "rate_limited" };
    // Every call of the request, or none: a window short of them sends it to the credits whole.
    if (counts.monthLimit > 0 && counts.monthUsed + calls > counts.monthLimit)
      return fromCredits("monthly_limit_exceeded");
    if (counts.dayLimit > 0 && counts.dayUsed + calls > counts.dayLimit)
      return fromCredits("daily_limit_exceeded");
    counts.dayUsed = this.#incr(dk, now, q.windows.dayTtlMs, units);
    counts.monthUsed = this.#incr(mk, now, q.windows.monthTtlMs, units);
    this.#remember(q.authorizationId, { lease: leaseOf(q, account.id, units) });
    return { ...base, ...counts, units, decision: "allow" };
  }

  /** release.lua's twin. */
  async release(authorizationId: string, dedupeTtlMs: number): Promise<boolean> {
    if (!this.#firstTime(`ax:${authorizationId}`, AUTHORIZATION_MEMORY_MS)) return false;
    const grant = this.#grants.get(authorizationId);
    this.#grants.delete(authorizationId);
    if (!grant || grant.expiresAt <= this.#clock()) return true;
    if (grant.credits) {
      this.#creditLeases.delete(authorizationId);
      this.#creditBack(grant.lease.accountId, grant.credits);
    } else await this.returnLease(grant.lease, dedupeTtlMs);
    return true;
  }

  /** credit-lease-return.lua's twin. */
  async returnCreditLease(leaseId: string, creditsLeft: number): Promise<boolean> {
    const lease = this.#creditLeases.get(leaseId);
    if (!lease) return false;
    this.#creditLeases.delete(leaseId);
    const left = Math.min(Math.floor(creditsLeft), lease.amount - lease.used);
    if (left > 0) this.#creditBack(lease.accountId, { drawn: left, epoch: lease.epoch });
    return true;
  }

  /** credit-lease-use.lua's twin. */
  async useCreditLeases(batchId: string, uses: CreditLeaseUse[], dedupeTtlMs: number): Promise<boolean> {
    if (uses.length === 0 || !this.#firstTime(`cu:${batchId}`, dedupeTtlMs)) return false;
    for (const u of uses) {
      const lease = this.#creditLeases.get(u.leaseId);
      if (lease) {
        lease.used += u.credits;
        continue;
      }
      const settled = this.#settledLeases.get(u.leaseId);
      if (settled && settled.expiresAt > this.#clock() && this.#mark === settled.epoch)
        this.#credits.set(settled.accountId, (this.#credits.get(settled.accountId) ?? 0) - u.credits);
    }
    return true;
  }

  /** credit-lease-expire.lua's twin. */
  async expireCreditLeases(nowMs: number, limit: number): Promise<number> {
    const due = [...this.#creditLeases].filter(([, l]) => l.settleAt <= nowMs);
    due.sort((a, b) => a[1].settleAt - b[1].settleAt);
    const settling = due.slice(0, limit);
    for (const [id, lease] of settling) {
      this.#creditLeases.delete(id);
      const rest = lease.amount - lease.used;
      if (rest <= 0) continue;
      this.#creditBack(lease.accountId, { drawn: rest, epoch: lease.epoch });
      this.#settledLeases.set(id, {
        accountId: lease.accountId,
        epoch: lease.epoch,
        expiresAt: this.#clock() + AUTHORIZATION_MEMORY_MS,
      });
    }
    return settling.length;
  }

  /** Credits drawn in this copy go back; drawn in an earlier one (it was seeded since), never taken here. */
  #creditBack(accountId: string, credits: { drawn: number; epoch: string }): void {
    if (this.#mark === credits.epoch)
      this.#credits.set(accountId, (this.#credits.get(accountId) ?? 0) + credits.drawn);
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
    if (r.credits && r.credits.drawn > 0) {
      // refund.lua's rule: an open lease counts it as used; a settled one gave it back already.
      const lease = r.credits.lease ? this.#creditLeases.get(r.credits.lease) : undefined;
      if (lease) lease.used += r.credits.drawn;
      else if (r.credits.lease && (this.#settledLeases.get(r.credits.lease)?.expiresAt ?? 0) > this.#clock())
        return true;
      this.#creditBack(r.accountId, r.credits);
      return true;
    }
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

  async bindWallet(address: string, accountId: string): Promise<void> {
    this.#wallets.set(address, accountId);
  }

  /** credit-apply.lua's twin. */
  async applyCredits(entries: CreditEntry[], dedupeTtlMs: number): Promise<number[]> {
    if (entries.length === 0) return [];
    if (this.#mark === null) throw new CopyNotReady();
    return entries.map((e) => {
      const balance = this.#credits.get(e.accountId) ?? 0;
      if (e.generation !== this.#mark || !this.#firstTime(`cc:${e.accountId}:${e.cause}`, dedupeTtlMs))
        return balance;
      this.#credits.set(e.accountId, balance + Math.trunc(e.delta));
      return balance + Math.trunc(e.delta);
    });
  }

  async setCredits(balances: Array<{ accountId: string; balance: number }>): Promise<void> {
    for (const b of balances) this.#credits.set(b.accountId, b.balance);
  }

  async readCredits(accountId: string): Promise<number> {
    return this.#credits.get(accountId) ?? 0;
  }

  /** read-credits.lua's twin. */
  async readShownCredits(accountId: string): Promise<number> {
    let held = 0;
    for (const l of this.#creditLeases.values())
      if (l.accountId === accountId) held += Math.max(0, l.amount - l.used);
    return (this.#credits.get(accountId) ?? 0) + held;
  }

  /** RedisStore.openCreditLeases's twin. */
  async openCreditLeases(accountId: string): Promise<OpenCreditLease[]> {
    return [...this.#creditLeases]
      .filter(([, l]) => l.accountId === accountId)
      .map(([id, l]) => ({ id, amount: l.amount, used: l.used }))
      .sort((a, b) => a.id.localeCompare(b.id));
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
