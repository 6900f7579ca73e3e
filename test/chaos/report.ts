// The chaos run's report: what each phase saw and what the reconciliation found (the JSON the run
// writes), the one-line summary logged after each phase, and the table the docs show.
import type { HeapGrowth, SoakSample, SoakSlope } from "./soak.ts";

export type Class = "key" | "x402" | "batch" | "mpp" | "session";
export const CLASSES: Class[] = ["key", "x402", "batch", "mpp", "session"];

export interface PhaseReport {
  fault: string;
  /** Seconds the fault was held (until the part came back). */
  heldS: number;
  /** Per class: answers by status. */
  answered: Record<Class, Record<string, number>>;
  served: Record<Class, number>;
  failOpen: number;
  /** Seconds from the part being back to the last failed answer (0: none failed after). */
  recoverS: Record<Class, number>;
  /** Answers with a 500 (never acceptable), or 5xx outside 502/503/504. */
  bad5xx: number;
  /** The refusals seen, by class, status and code, with one message each. */
  reasons: Record<Class, Record<string, string>>;
  /** What the fault found when it struck (e.g. settlements in flight). */
  notes: string[];
  /** Reconciliation after recovery (cumulative since the start). */
  check: Reconciliation;
  /** The cluster run's books (`--cluster`): what async replication lost, and the money rules. */
  cluster?: ClusterBooks;
}

/**
 * What a Redis failover (async replication) or a lost NATS node cost, cumulative since the start,
 * and the four money rules, each a count that must stay 0.
 */
export interface ClusterBooks {
  lost: {
    /** API-key calls served with quota headers that the windows no longer count (window < tally). */
    quotaUnits: number;
    /** Units the windows count beyond the calls served (a give-back lost), past the Authorizes given up on. */
    quotaOvercounted: number;
    /** x402-batch calls served that the channel's charged amount no longer covers (price units). */
    batchVouchers: number;
    /** MPP session calls served that the channel's accepted amount no longer covers (price units). */
    sessionVouchers: number;
    /** Credit draws the hot balance (Redis) no longer holds, against the ledger (price units). */
    creditDebits: number;
    /** Usage and settlement events missing from PostgreSQL (rollups, ledger) after convergence. */
    events: number;
  };
  money: {
    settledTwice: number;
    chargedUnserved: string;
    revertedSettlements: number;
    creditsBelowZero: number;
  };
  /** Credits: bought, drawn per the load's tally, the ledger's and the hot balance (atomic units). */
  credits: { bought: number; drawnForServed: number; ledger: number; hot: number; failOpen: number };
  /** Settlement outcomes in the ledger, by kind. */
  outcomes: Record<string, number>;
  /** The `failed` ones by reason (nothing charged; refused, or a broadcast that did not settle). */
  failedReasons: Record<string, number>;
}

export interface Reconciliation {
  /** Per account: X-Quota-Day-Used vs the load generator's served-with-headers tally. */
  windowsExact: boolean;
  /**
   * API-key calls answered 503 so far because Authorize did not answer within its deadline (or
   * quota-meter was down): the most the windows can be over the tally (a late Authorize counted a
   * unit the gateway had given up on).
   */
  authGaveUp: number;
  windows: { account: string; window: number; tally: number }[];
  /** usage_daily.counted vs tally, and requests vs calls reported. */
  usageCounted: { pg: number; tally: number };
  usageRequests: { pg: number; tally: number };
  /** Payment ledger (settlement worker) settled rows of the exact payers vs paid calls served. */
  ledgerSettled: { pg: number; tally: number; duplicateTransactions: number };
  /** What the exact payers paid on chain vs price × served. */
  charged: { onChain: string; forServed: string };
  /** The batch channel's charged cumulative amount vs price × served batch calls. */
  batchCharged: { channel: string; forServed: string };
  /** What the MPP charge payer's transfers brought the payee (pathUSD, on chain) vs price × served. */
  mppCharged: { onChain: string; forServed: string };
  /**
   * The MPP session channel: what the server accepted (the receipts' `spent`) vs price × served,
   * and what has been settled to the payee on chain (USDC.e) by the scheduled session settle.
   */
  session: { accepted: string; forServed: string; settled: string };
  /** Paid answers that named a settlement transaction another answer already named. */
  servedTwice: number;
  /** Seconds until the rollups and the ledger matched the tally. */
  convergeS: number;
  lost: number;
  duplicated: number;
}

export interface ChaosReport {
  mode: "full" | "short" | "soak";
  startedAt: string;
  durationS: number;
  load: {
    keyAccounts: number;
    x402Payers: number;
    batchPayers: number;
    mppPayers: number;
    sessionPayers: number;
  };
  phases: PhaseReport[];
  totals: {
    answered: Record<Class, number>;
    served: Record<Class, number>;
    bad5xx: number;
    lost: number;
    duplicated: number;
    chargedNotServed: string;
    servedTwice: number;
    maxRecoverS: number;
  };
  soak?: {
    minutes: number;
    slopes: SoakSlope[];
    outboxFiles: number;
    /** Answers while sampled, by class and status, and one message per refusal (the soak's phase counts only its own window). */
    answered: PhaseReport["answered"];
    reasons: PhaseReport["reasons"];
    /** Every sample (minutes since the soak started), for plotting or a second look. */
    samples: SoakSample[];
    heapSnapshots?: HeapGrowth[];
    /** Run in pod limits (--limits): each service's limit, its group's peak and OOM kills. */
    pods?: {
      limitsMb: Record<string, number>;
      peakMb: Record<string, number>;
      oomKills: Record<string, number>;
    };
  };
}

export const round = (n: number) => Math.round(n * 10) / 10;

export function summaryLine(p: PhaseReport): string {
  const statuses = (c: Class) =>
    Object.entries(p.answered[c])
      .map(([s, n]) => `${s}×${n}`)
      .join(" ");
  return `  ${p.fault}: key[${statuses("key")}] x402[${statuses("x402")}] batch[${statuses("batch")}] mpp[${statuses("mpp")}] session[${statuses("session")}] failOpen=${p.failOpen} recover=${JSON.stringify(p.recoverS)} lost=${p.check.lost} dup=${p.check.duplicated} windowsExact=${p.check.windowsExact} charged=${p.check.charged.onChain}/${p.check.charged.forServed} mpp=${p.check.mppCharged.onChain}/${p.check.mppCharged.forServed} session=${p.check.session.accepted}/${p.check.session.forServed} settled=${p.check.session.settled} ${p.notes.join("; ")}`;
}

/** The table the README shows: one row per fault. */
export function table(report: ChaosReport): string {
  const head =
    "| Fault | Held s | API-key answers (status×n) | x402 exact | x402-batch | MPP charge | MPP session | Fail-open | Recover s (key/x402/batch/mpp/session) | 5xx other than 502/503/504 | Lost | Duplicated | Windows exact | Charged − served (µUSDC: x402/MPP charge/session) | Session settled (µUSDC) |";
  const rule = `|${"---|".repeat(15)}`;
  const over = (charged: string, forServed: string) => String(BigInt(charged) - BigInt(forServed));
  const fmt = (r: Record<string, number>) =>
    Object.entries(r)
      .map(([s, n]) => `${s}×${n}`)
      .join(" ");
  const rows = report.phases.map((p) =>
    [
      p.fault,
      p.heldS,
      fmt(p.answered.key),
      fmt(p.answered.x402),
      fmt(p.answered.batch),
      fmt(p.answered.mpp),
      fmt(p.answered.session),
      p.failOpen,
      CLASSES.map((c) => p.recoverS[c]).join("/"),
      p.bad5xx,
      p.check.lost,
      p.check.duplicated,
      p.check.windowsExact ? "yes" : "NO",
      [
        over(p.check.charged.onChain, p.check.charged.forServed),
        over(p.check.mppCharged.onChain, p.check.mppCharged.forServed),
        over(p.check.session.accepted, p.check.session.forServed),
      ].join("/"),
      p.check.session.settled,
    ].join(" | "),
  );
  return [head, rule, ...rows.map((r) => `| ${r} |`)].join("\n");
}
