// When an MPP session channel is settled, and what its settlement records: rules without I/O. A
// channel (as mppx keeps it in payment-verifier's Redis state) is settled, never beyond what it
// spent on served calls (save a payer that signed ahead of its calls and is leaving:
// settleableVoucher), when what it spent beyond what is settled on chain reaches the minimum
// amount, when its oldest unsettled charge is older than the interval, or at once when its payer
// asked the reserve (on chain) to close it: the charges must land before the close's grace period
// ends. A closed (finalized) channel is done.
import type { SettlementEventV2 } from "@tollgate/events";
import type { StoredVoucher } from "@tollgate/payment-rails";

/** The fields of mppx's stored channel this worker reads (bigints as mppx's JSON revives them). */
export interface StoredChannel {
  channelId: string;
  payer: string;
  token: string;
  chainId: number;
  highestVoucherAmount: bigint;
  highestVoucher?: StoredVoucher | null;
  /** The highest voucher within what was spent (payment-verifier's mppx store keeps it). */
  settleableVoucher?: StoredVoucher | null;
  /** The lowest voucher above what was spent (kept alongside). */
  ceilingVoucher?: StoredVoucher | null;
  settledOnChain: bigint;
  spent: bigint;
  finalized: boolean;
  closeRequestedAt: bigint;
  createdAt: string;
  lastSettlementAt?: string;
}

export interface SettleSchedule {
  /** Settle once this much (atomic units) is accepted but not settled on chain. */
  minAmount: bigint;
  /** Settle any unsettled charge this old. */
  intervalMs: number;
}

export type DueReason = "amount" | "age" | "close_requested";

/**
 * The voucher a settle of `channel` uses: the highest when it is within what was spent; else the
 * highest voucher within what was spent that payment-verifier kept (mppx accepts a voucher and
 * charges its call in two store updates: a Redis failure between them leaves the highest a price
 * above what was spent until the payer's next call re-sends it and spends it, and meanwhile the
 * voucher before it is exactly what was spent). `leaving`: the payer asked the reserve to close the
 * channel; when no voucher it signed is exactly what it spent (it signed two prices or more ahead
 * of its calls, which the official client does not), the lowest one above (`ceilingVoucher`), or
 * the payer would take back at the end of the grace period what its served calls owe. Undefined:
 * nothing to settle.
 */
export function settleableVoucher(channel: StoredChannel, leaving = false): StoredVoucher | undefined {
  const highest = channel.highestVoucher ?? undefined;
  if (!highest || highest.cumulativeAmount <= channel.spent) return highest;
  const kept = channel.settleableVoucher;
  const within = kept && kept.cumulativeAmount <= channel.spent ? kept : undefined;
  if (leaving && (within?.cumulativeAmount ?? 0n) < channel.spent) {
    const ceiling = channel.ceilingVoucher;
    return ceiling && ceiling.cumulativeAmount > channel.spent ? ceiling : highest;
  }
  return within;
}

/**
 * Why `channel` should be settled now, or undefined (nothing unsettled, or not due yet).
 * `closeRequested`: the payer asked the reserve (on chain) to close it.
 */
export function settlementDue(
  channel: StoredChannel,
  schedule: SettleSchedule,
  now: number,
  closeRequested: boolean,
): DueReason | undefined {
  if (channel.finalized) return undefined;
  const unsettled =
    (settleableVoucher(channel, closeRequested)?.cumulativeAmount ?? 0n) - channel.settledOnChain;
  if (unsettled <= 0n) return undefined;
  if (closeRequested) return "close_requested";
  if (unsettled >= schedule.minAmount) return "amount";
  const since = Date.parse(channel.lastSettlementAt ?? channel.createdAt);
  if (Number.isFinite(since) && now - since >= schedule.intervalMs) return "age";
  return undefined;
}

/** Whether the worker can drop the channel from its work list. */
export function settledForGood(channel: StoredChannel | null): boolean {
  return channel === null || channel.finalized;
}

/**
 * The ledger's record of one settlement: `channel_settled`, its id from the channel and the
 * transaction (a republished event is the same event), no request.
 */
export function channelSettledEvent(
  channel: StoredChannel,
  settle: { transaction: string; delta: bigint; settled: bigint; reason: DueReason },
  now: number,
): SettlementEventV2 {
  const channelId = channel.channelId.toLowerCase();
  return {
    id: `channel_settled:${channelId}:${settle.transaction.toLowerCase()}`,
    request_id: null,
    endpoint: null,
    network: null,
    scheme: "mpp-session",
    payer: channel.payer,
    amount: String(settle.delta),
    asset: channel.token,
    payment_network: `eip155:${channel.chainId}`,
    outcome: "channel_settled",
    transaction: settle.transaction,
    channel: channelId,
    cumulative: String(settle.settled),
    reason: `scheduled: ${settle.reason}`,
    time: new Date(now).toISOString(),
  };
}
