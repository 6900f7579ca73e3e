// The ledger's rules, free of any database: what one settlement event becomes, which outcomes moved
// money on chain to the receiver, and how listings are filtered and paged.
import type { SettlementEventV1, SettlementEventV2 } from "@tollgate/events";

export const OUTCOMES = [
  "settled",
  "accrued",
  "failed",
  "released",
  "claimed",
  "channel_settled",
  "refunded",
] as const;
export type Outcome = (typeof OUTCOMES)[number];

/**
 * Outcomes whose transaction moved tokens to the receiver: an `exact` settlement, and a channel's
 * settlement (an MPP session's settle, an x402-batch `settle(receiver, token)`). `failed` may name a
 * transaction that moved nothing; accruals move nothing until claimed; an x402-batch claim moves
 * the charges to the receiver's side inside the escrow (its settle transfers them); `refunded` goes
 * back to the payer.
 */
export const INFLOWS: readonly Outcome[] = ["settled", "channel_settled"];

/** What a payer paid per call: on chain per call (`settled`), or charged to a channel (`accrued`). */
export const PAYMENTS: readonly Outcome[] = ["settled", "accrued"];

/**
 * How released calls are kept: they move no money and a payer makes them for free (one
 * authorization reused on a request refused after Verify), so they are samples, at most `perHour`
 * per payer per UTC hour, dropped after `retentionDays`; the rest are only counted
 * (`settlement_ledger_events_total{outcome="released",result="over_bound"}`).
 */
export interface ReleasedPolicy {
  perHour: number;
  retentionDays: number;
}

/** What became of a released event. */
export type ReleasedResult = "recorded" | "duplicate" | "over_bound" | "expired";

const HOUR_MS = 3_600_000;

/** The UTC hour a time falls in: a payer's window for released samples. */
export function hourOf(time: string): Date {
  const ms = Date.parse(time);
  return new Date(ms - (((ms % HOUR_MS) + HOUR_MS) % HOUR_MS));
}

/** Released samples from before this are pruned, and not written again when a replay brings them. */
export function releasedCutoff(policy: ReleasedPolicy, now = Date.now()): Date {
  return new Date(now - policy.retentionDays * 24 * HOUR_MS);
}

/** One ledger row: a settlement event as recorded. */
export interface LedgerEntry {
  id: string;
  outcome: Outcome;
  requestId: string | null;
  endpoint: string | null;
  network: string | null;
  scheme: string;
  payer: string;
  /** Atomic units, a decimal string. */
  amount: string;
  asset: string;
  paymentNetwork: string;
  transaction: string | null;
  channel: string | null;
  cumulative: string | null;
  reason: string | null;
  /** RFC 3339. */
  time: string;
}

export function entryOf(e: SettlementEventV2): LedgerEntry {
  return {
    id: e.id,
    outcome: e.outcome,
    requestId: e.request_id,
    endpoint: e.endpoint,
    network: e.network,
    scheme: e.scheme,
    payer: e.payer,
    amount: e.amount,
    asset: e.asset,
    paymentNetwork: e.payment_network,
    transaction: e.transaction,
    channel: e.channel,
    cumulative: e.cumulative,
    reason: e.reason,
    time: e.time,
  };
}

/** A v1 event (journals written before the upgrade): a per-call outcome without channel fields. */
export function entryOfV1(e: SettlementEventV1): LedgerEntry {
  return entryOf({ ...e, channel: null, cumulative: null });
}

/** A listing: by payer, UTC day or channel (at least one), optionally one outcome. */
export interface LedgerFilter {
  payer?: string;
  /** YYYY-MM-DD (UTC). */
  day?: string;
  channel?: string;
  outcome?: Outcome;
}

/** Where a page ends: the last entry's time and id (entries are listed newest first). */
export interface Cursor {
  time: string;
  id: string;
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.time, c.id])).toString("base64url");
}

export function decodeCursor(text: string): Cursor | undefined {
  try {
    const [time, id] = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as unknown[];
    if (typeof time !== "string" || typeof id !== "string" || !Number.isFinite(Date.parse(time)))
      return undefined;
    return { time, id };
  } catch {
    return undefined;
  }
}

/** The UTC day's bounds, [start, end). */
export function dayBounds(day: string): { start: Date; end: Date } {
  const start = new Date(`${day}T00:00:00.000Z`);
  return { start, end: new Date(start.getTime() + 24 * 3_600_000) };
}
