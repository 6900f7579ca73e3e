// The API-key plans, named once. quota-meter holds the figures in force (its environment, with these
// defaults) and states them (QuotaMeterService.DescribePlans); the gateway's /api/pricing,
// /openapi.json and /llms.txt and the dashboard's pages show what it states, never figures of their own.

/** "standard": the API-key plan of spec 8, what the operator gives. "free": what self-serve sign-up gives. */
export const PLAN_NAMES = ["standard", "free"] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export function isPlanName(s: string): s is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(s);
}

export interface PlanFigures {
  /** Calls a UTC day (0 = uncapped). */
  dailyLimit: number;
  /** Calls a calendar month (0 = uncapped). */
  monthlyLimit: number;
  /** The burst guard: calls a second across all replicas (0 = none). */
  burstPerSecond: number;
}

/** Spec 8's API-key plan: quota-meter's DAILY_LIMIT, MONTHLY_LIMIT, BURST_PER_SECOND defaults. */
export const PLAN_DEFAULTS = { dailyLimit: 200_000, monthlyLimit: 2_000_000, burstPerSecond: 50 } as const;

/**
 * The free plan of accounts a first dashboard sign-in creates (sign-up costs nothing, so it is
 * small): quota-meter's FREE_DAILY_LIMIT, FREE_MONTHLY_LIMIT, FREE_BURST_PER_SECOND defaults.
 */
export const FREE_PLAN_DEFAULTS = { dailyLimit: 1_000, monthlyLimit: 10_000, burstPerSecond: 5 } as const;

export interface Plans {
  standard: PlanFigures;
  free: PlanFigures;
}

/** What quota-meter states unless its operator set other figures. */
export const DEFAULT_PLANS: Plans = { standard: PLAN_DEFAULTS, free: FREE_PLAN_DEFAULTS };

/** How a free account gets more, in one sentence every page and document uses. */
export function moreThanFree(payPerCall: string): string {
  return `For more: ${payPerCall ? `pay per call with ${payPerCall} (no account, no quota), or ` : ""}ask the operator to move the account to a larger plan.`;
}

/** "1,000 calls a day, 10,000 a month, at most 5 a second" (0 = uncapped / no guard). */
export function describePlan(p: PlanFigures): string {
  const n = (v: number) => v.toLocaleString("en-US");
  return [
    p.dailyLimit ? `${n(p.dailyLimit)} calls a day` : "no daily cap",
    p.monthlyLimit ? `${n(p.monthlyLimit)} a month` : "no monthly cap",
    ...(p.burstPerSecond ? [`at most ${n(p.burstPerSecond)} a second`] : []),
  ].join(", ");
}

const sameFigures = (a: PlanFigures, b: PlanFigures) =>
  a.dailyLimit === b.dailyLimit && a.monthlyLimit === b.monthlyLimit && a.burstPerSecond === b.burstPerSecond;

/**
 * A value another service states (quota-meter's plans, rpc-proxy's quorum reads), for a process that
 * shows it: asked on first use and again when older than `ttlMs` (after a failure, `retryMs`), with
 * no timer, so a process that stops asking stops calling. Until the service has answered once, or
 * while it cannot be reached, the last value known stands (at first: `initial`). Only the first use
 * waits for an answer; the object returned changes only when `same` says the value did (a reader may
 * rebuild what it derived on a new object). `onError` hears the first failure of each outage.
 */
export function statedSource<T>(
  load: () => Promise<T>,
  opts: {
    initial: T;
    same(a: T, b: T): boolean;
    ttlMs: number;
    retryMs: number;
    onError(err: unknown): void;
  },
) {
  let value = opts.initial;
  let nextAt = 0;
  let answered = false;
  let failing = false;
  let pending: Promise<void> | undefined;
  const refresh = () => {
    pending ??= load().then(
      (next) => {
        if (!opts.same(next, value)) value = next;
        answered = true;
        failing = false;
        nextAt = Date.now() + opts.ttlMs;
        pending = undefined;
      },
      (err: unknown) => {
        // Once per outage, not once per retry.
        if (!failing) opts.onError(err);
        failing = true;
        nextAt = Date.now() + opts.retryMs;
        pending = undefined;
      },
    );
    return pending;
  };
  return {
    async get(): Promise<T> {
      if (Date.now() >= nextAt) {
        const asked = refresh();
        if (!answered) await asked;
      }
      return value;
    },
  };
}

/** The plans as quota-meter states them (statedSource; at first: DEFAULT_PLANS). */
export function planSource(
  load: () => Promise<Plans>,
  opts: { ttlMs: number; retryMs: number; onError(err: unknown): void },
) {
  return statedSource(load, {
    ...opts,
    initial: DEFAULT_PLANS,
    same: (a, b) => sameFigures(a.standard, b.standard) && sameFigures(a.free, b.free),
  });
}

/** Plans from quota-meter's DescribePlans answer (its figures only). */
export function plansFrom(res: { standard: PlanFigures | null; free: PlanFigures | null }): Plans {
  if (!res.standard || !res.free) throw new Error("quota-meter stated no plans");
  const figures = ({ dailyLimit, monthlyLimit, burstPerSecond }: PlanFigures): PlanFigures => ({
    dailyLimit,
    monthlyLimit,
    burstPerSecond,
  });
  return { standard: figures(res.standard), free: figures(res.free) };
}
