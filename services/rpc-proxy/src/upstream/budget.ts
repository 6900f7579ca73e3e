// Per-upstream call budgets (UPSTREAM_LIMITS_<NETWORK>, README, Upstream budgets): a provider's
// own rate limit and monthly allowance, kept here so its 429 is avoided rather than suffered.

/** One upstream's limits; a missing one is no limit. */
export interface UpstreamLimit {
  /** Node calls per second (a token bucket holding one second's worth). */
  perSecond?: number;
  /** Node calls per calendar month (UTC), counted by this replica since it started. */
  perMonth?: number;
}

/** Which limit a call would break: the `limit` label of rpc_proxy_upstream_budget_skips_total. */
export type BudgetLimit = "rate" | "month";

/**
 * A token bucket refilled lazily on use (no timer) and a monthly counter, both plain numbers: a
 * call costs two comparisons and a few additions. `refuses` then `take` in the same turn of the
 * event loop (the pool's pick, then its send).
 */
export class CallBudget {
  readonly #perMs: number;
  readonly #capacity: number;
  readonly #perMonth: number;
  #tokens: number;
  #at = 0;
  #used = 0;
  /** Epoch ms at which the month's count starts again (0: not started). */
  #monthEnds = 0;

  constructor(limit: UpstreamLimit) {
    const perSecond = limit.perSecond ?? Number.POSITIVE_INFINITY;
    this.#perMs = perSecond / 1000;
    this.#capacity = Math.max(1, perSecond);
    this.#tokens = this.#capacity;
    this.#perMonth = limit.perMonth ?? Number.POSITIVE_INFINITY;
  }

  /** Calls counted this month (rpc_proxy_upstream_month_calls). */
  get monthCalls(): number {
    return this.#used;
  }

  /** The limit a call now would break, or undefined: within budget. */
  refuses(now: number): BudgetLimit | undefined {
    this.#refill(now);
    if (this.#tokens < 1) return "rate";
    if (this.#used >= this.#perMonth) return "month";
    return undefined;
  }

  /**
   * One node call. A head poll takes one even over the budget (it is never skipped), down to one
   * second's worth in debt, which the calls after it then wait out.
   */
  take(now: number): void {
    this.#refill(now);
    this.#tokens = Math.max(-this.#capacity, this.#tokens - 1);
    this.#used++;
  }

  #refill(now: number): void {
    if (now >= this.#monthEnds) {
      // Once a month: the next month's first millisecond (UTC).
      const d = new Date(now);
      this.#monthEnds = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
      this.#used = 0;
    }
    if (this.#perMs === Number.POSITIVE_INFINITY) return;
    const elapsed = now - this.#at;
    this.#at = now;
    if (elapsed > 0) this.#tokens = Math.min(this.#capacity, this.#tokens + elapsed * this.#perMs);
  }
}
