import type { PlanName } from "@tollgate/catalog";
import type { Windows } from "../windows.ts";

export const ACCOUNT_STATUSES = ["active", "past_due", "canceled", "suspended"] as const;
export type AccountStatus = (typeof ACCOUNT_STATUSES)[number];

export function isAccountStatus(s: string): s is AccountStatus {
  return (ACCOUNT_STATUSES as readonly string[]).includes(s);
}

export interface AccountRecord {
  id: string;
  name: string;
  status: AccountStatus;
  /** 0 = uncapped. */
  dailyLimit: number;
  monthlyLimit: number;
  /** 0 = the service default. */
  burstPerSecond: number;
  /** The plan the limits were set from: the operator's "standard", or "free" (self-serve sign-up). */
  plan: PlanName;
  createdAt: string;
  /** Calls are paid from credits only (no plan windows); unset = false. */
  creditsOnly?: boolean;
  /**
   * Made by a credits top-up for a wallet without an account: credits only until the wallet signs
   * up on the dashboard (the sign-up policy applied), which moves it to the free plan. Unset = false.
   */
  signUpPending?: boolean;
}

export type AccountPatch = Partial<
  Pick<
    AccountRecord,
    "status" | "dailyLimit" | "monthlyLimit" | "burstPerSecond" | "plan" | "creditsOnly" | "signUpPending"
  >
>;

export interface KeyRecord {
  id: string;
  accountId: string;
  prefix: string;
  createdAt: string;
  /** "" while the key is live. */
  revokedAt: string;
  /** "" until a call with it reached the usage rollups. */
  lastUsedAt: string;
}

export type Decision =
  | "allow"
  | "invalid_key"
  | "subscription_inactive"
  | "daily_limit_exceeded"
  | "monthly_limit_exceeded"
  | "rate_limited"
  /** Sign-in-with-x: the wallet is bound to no account. */
  | "no_account"
  /** A credits-only account whose balance does not cover the price. */
  | "no_credits";

export interface AuthorizeQuery {
  /** The API key's hash; ignored when `wallet` is set. */
  keyHash: Buffer;
  /** Sign-in-with-x: the verified wallet (lower-case 0x address); "" for an API-key call. */
  wallet: string;
  /** The call's price in USDC atomic units: drawn from credits when the windows are spent (0: never). */
  priceAtomic: number;
  nowMs: number;
  windows: Windows;
  /** Burst rate for accounts without their own (0 = no guard). */
  defaultBurst: number;
  /** Units wanted: 1 for one call, more for a lease the gateway serves calls from (at least `calls`). */
  units: number;
  /**
   * Calls in this request (a JSON-RPC batch: one per call; 1 for one call): counted all at once or
   * not at all (all their units in the windows and the burst guard, else `priceAtomic`, the whole
   * request's price, from the credits, else refused).
   */
  calls: number;
  /** The gateway's id of this Authorize ("" = none): what a release names. */
  authorizationId: string;
  /** When a credit lease drawn now is settled if its gateway never returns it (ms since epoch). */
  creditLeaseSettleAt: number;
  /** The key's credit lease the gateway ended for this call: returned first (returnCreditLease). */
  closeCreditLease?: { leaseId: string; creditsLeft: number };
}

/**
 * How long a grant is remembered for a release of its authorization id, and a release for an
 * Authorize that has not run yet: longer than the gateway resends a usage batch (10 minutes).
 */
export const AUTHORIZATION_MEMORY_MS = 15 * 60_000;

/**
 * What the store decided. Counts are "used including every unit granted" when it was
 * allowed, and the current counts (not incremented) when it was refused.
 */
export interface AuthorizeOutcome {
  /**
   * "released": the gateway released this authorization id before it ran; nothing counted.
   * "unseeded": the key (or wallet) was not found in a copy that has no seed mark: Redis lost it.
   */
  decision: Decision | "released" | "unseeded";
  keyId: string;
  accountId: string;
  status: string;
  /** The stored hash of the key that matched, for a constant-time check by the caller. */
  storedHash: Buffer | undefined;
  dayUsed: number;
  monthUsed: number;
  dayLimit: number;
  monthLimit: number;
  /**
   * Units granted (0 when refused): at least 1, at most what was wanted; with `credits`, the calls
   * at this price the credit lease covers.
   */
  units: number;
  /** Set when the call was paid from credits instead (decision "allow"): a credit lease. */
  credits?: CreditDraw;
  /** The account's credit balance as the refusal found it (refusals by a window or no credits). */
  balance?: number;
}

/** A credit lease still open: drawn from the balance, `used` of it reported used by answered calls. */
export interface OpenCreditLease {
  id: string;
  amount: number;
  used: number;
}

/** A credit lease: a block of the account's credits drawn for the key's next calls. */
interface CreditDraw {
  /** Atomic units drawn (`units` × the price). */
  drawn: number;
  /** The balance after the draw. */
  remaining: number;
  /** The hot copy's generation (its seed mark) the draw was made in. */
  epoch: string;
}

/**
 * A change to an account's credit balance written to the ledger (PostgreSQL) first, then applied
 * to the hot copy once: only when the copy is of `generation` (a copy seeded later read the row
 * already), and once per (account, cause).
 */
export interface CreditEntry {
  cause: string;
  accountId: string;
  /** Atomic units: positive credits the account, negative draws from it. */
  delta: number;
  generation: string;
}

/** applyCredits found no complete copy (Redis lost it and is being seeded): retry later. */
export class CopyNotReady extends Error {
  constructor() {
    super("the hot copy is being seeded: credits are applied once it is complete");
  }
}

/** Units of a lease the gateway did not use, given back to the windows it was counted in. */
export interface LeaseReturn {
  leaseId: string;
  accountId: string;
  day: string;
  month: string;
  units: number;
}

/** A key as the fail-open snapshot knows it. */
export interface KnownKey {
  hash: Buffer;
  keyId: string;
  accountId: string;
  status: string;
}

export interface Refund {
  /** The gateway's own id of the call (never the caller's); with the account, the once-only key. */
  requestId: string;
  accountId: string;
  day: string;
  month: string;
  /**
   * The call drew credits instead of a unit: they go back (when the copy it drew from is current),
   * the windows are left alone. `lease`: the credit lease (authorization id) it drew from.
   */
  credits?: { drawn: number; epoch: string; lease: string };
}

/** What a usage batch's answered calls drew from one credit lease. */
export interface CreditLeaseUse {
  leaseId: string;
  credits: number;
}

/** An account's usage totals of one UTC day, as the rollups in PostgreSQL hold them. */
export interface UsageTotal {
  accountId: string;
  day: string;
  requests: number;
  errors: number;
}

/** A quota window's count rebuilt from the rollups (re-seeding after a loss). */
export interface WindowCount {
  accountId: string;
  /** "day" (`d:<acct>:<YYYY-MM-DD>`) or "month" (`m:<acct>:<YYYY-MM>`). */
  kind: "day" | "month";
  window: string;
  count: number;
  /** The counter's lifetime, as Authorize would set it. */
  ttlMs: number;
}

export interface DailyUsage {
  day: string;
  requests: number;
  errors: number;
}

export interface UsageQuery {
  keyHash: Buffer;
  nowMs: number;
  /** The current windows, whose counts come back with the days. */
  windows: Windows;
  /** The UTC days asked, oldest first. */
  days: string[];
  /** Burst rate for accounts without their own (0 = no guard). */
  defaultBurst: number;
}

/** What a usage read found. Days and counts are only filled when it was allowed. */
export interface UsageOutcome {
  decision: "allow" | "invalid_key" | "subscription_inactive" | "rate_limited";
  keyId: string;
  accountId: string;
  /** The stored hash of the key that matched, for a constant-time check by the caller. */
  storedHash: Buffer | undefined;
  days: DailyUsage[];
  dayUsed: number;
  monthUsed: number;
  dayLimit: number;
  monthLimit: number;
}

/**
 * The hot copy of quota-meter's records (accounts and live keys: what the scripts read) and the
 * counters (windows, burst guard, per-day usage). PostgreSQL is the system of record
 * (src/db/records.ts); seeder.ts rebuilds this copy from it when it is lost. Two implementations:
 * Redis (shared by all replicas) and memory (the single-node stand-in when Redis is unreachable
 * at startup).
 */
export interface QuotaStore {
  readonly kind: "redis" | "memory";
  /** Whether a command can be sent right now (false while Redis is reconnecting). */
  isReady(): boolean;
  /** Key lookup → account → status → burst guard → both windows, atomically, in one round trip. */
  authorize(query: AuthorizeQuery): Promise<AuthorizeOutcome>;
  /** Gives a failed call's unit back to both windows; once per (account, request id). */
  refund(refund: Refund, dedupeTtlMs: number): Promise<boolean>;
  /** Gives a lease's unused units back to both windows; once per (account, lease id). */
  returnLease(lease: LeaseReturn, dedupeTtlMs: number): Promise<boolean>;
  /** Gives a credit lease's unused credits back (credit-lease-return.lua); false: no such open lease. */
  returnCreditLease(leaseId: string, creditsLeft: number): Promise<boolean>;
  /** Counts what a usage batch's answered calls drew from credit leases; once per batch id. */
  useCreditLeases(batchId: string, uses: CreditLeaseUse[], dedupeTtlMs: number): Promise<boolean>;
  /** Settles up to `limit` credit leases past their settle time that were never returned; how many. */
  expireCreditLeases(nowMs: number, limit: number): Promise<number>;
  /**
   * The gateway gave up on the Authorize of `authorizationId`: what it granted goes back (unless
   * that lease was returned already), and an Authorize of that id not run yet counts nothing.
   * Once per id; false when it was released before.
   */
  release(authorizationId: string, dedupeTtlMs: number): Promise<boolean>;

  /** Writes the account as given (creates or replaces its hot copy). */
  createAccount(account: AccountRecord): Promise<void>;
  /** Makes a live key usable; false when the account has no hot copy. */
  createKey(key: KeyRecord, hash: Buffer): Promise<boolean>;
  /** Makes the key unusable at once; undefined when the store holds no such key of that account. */
  revokeKey(accountId: string, keyId: string, at: string): Promise<KeyRecord | undefined>;

  /** Binds a wallet to its account in the hot copy (sign-in-with-x finds the account by it). */
  bindWallet(address: string, accountId: string): Promise<void>;

  /**
   * Applies ledger entries to the balances: each only when the copy's generation is the entry's,
   * once per (account, cause). Returns each account's balance after its entry. Throws CopyNotReady
   * when the copy has no generation (being seeded).
   */
  applyCredits(entries: CreditEntry[], dedupeTtlMs: number): Promise<number[]>;
  /** Sets balances as read from the ledger (seeding). */
  setCredits(balances: Array<{ accountId: string; balance: number }>): Promise<void>;
  /** An account's balance in the copy (0 when it has none). */
  readCredits(accountId: string): Promise<number>;
  /** The balance the account is shown: the copy's with what its open credit leases still hold. */
  readShownCredits(accountId: string): Promise<number>;
  /** The account's open credit leases (what the operator's `account show` lists), by lease id. */
  openCreditLeases(accountId: string): Promise<OpenCreditLease[]>;

  /** Per-day usage totals from the rollups, merged as maxima (totals only grow, in any order). */
  mergeUsage(totals: UsageTotal[]): Promise<void>;

  // Re-seeding (seeder.ts): how a lost copy is noticed and rebuilt.
  /** The mark of a complete copy, or null when the store lost it (or never had one). */
  seedMark(): Promise<string | null>;
  setSeedMark(mark: string): Promise<void>;
  /** One replica seeds at a time: true when `owner` took the lock, or holds it already. */
  lockSeeding(owner: string, ttlMs: number): Promise<boolean>;
  unlockSeeding(owner: string): Promise<void>;
  /** While held, isReady() is false: Authorize fails open rather than read an incomplete copy. */
  hold(held: boolean): void;
  /** Calls `listener` each time the store's connection is (re)established. */
  onConnect(listener: () => void): void;
  /** Window counts rebuilt from the rollups; a counter that exists is kept. */
  restoreWindows(counts: WindowCount[]): Promise<void>;
  /**
   * Key lookup → account → status → the burst guard Authorize uses → both windows and every
   * day asked, atomically, in one round trip. Counts nothing in the windows.
   */
  readUsage(query: UsageQuery): Promise<UsageOutcome>;
  /** An account's counts in the current windows, as Authorize counts them (the X-Quota-* numbers). */
  readWindows(
    accountId: string,
    windows: Windows,
    nowMs: number,
  ): Promise<{ dayUsed: number; monthUsed: number }>;

  close(): Promise<void>;
}

/** How long per-day usage is kept (GetUsage serves up to a year). */
export const USAGE_RETENTION_MS = 400 * 24 * 60 * 60 * 1000;
