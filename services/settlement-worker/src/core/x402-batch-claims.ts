// x402-batch claims, settles and refunds: the rules, without I/O. payment-verifier accepts vouchers
// into the channel records (the official RedisChannelStorage); the settlement worker turns them into
// money: `claimWithSignature` for many channels in one transaction, then `settle(receiver, token)`,
// the cooperative refunds payers ask for (payment-verifier takes the request), and a cooperative
// refund of channels idle for long. Only what the chain has confirmed counts: a
// channel is claimed only up to its on-chain balance (a deposit still unconfirmed would make the
// whole batched claim revert: a known SDK race), and what the chain says was claimed wins over the
// record (a claim whose record update was lost is never claimed twice).
import type { RefundRequest } from "@tollgate/payment-rails";

/** The fields of the SDK's channel record this worker reads (amounts are decimal strings). */
export interface ChannelRecord {
  channelId: string;
  channelConfig: { payer: string; token: string; receiver: string };
  chargedCumulativeAmount: string;
  balance: string;
  totalClaimed: string;
  lastRequestTimestamp: number;
  pendingRequest?: { pendingId?: string; expiresAt: number } | undefined;
  /** A payer's refund request payment-verifier took (libs/payment-rails batch-refunds.ts). */
  refundRequest?: RefundRequest | undefined;
  /** The latest voucher (what a claim of the charged total carries). */
  signedMaxClaimable?: string;
  signature?: string;
}

/** A channel as the chain has it (confirmed state). */
export interface OnChainChannel {
  balance: bigint;
  totalClaimed: bigint;
  /** The payer started a timed withdrawal: whatever is unclaimed must be claimed before it ends. */
  withdrawing: boolean;
  /** The nonce the next `refundWithSignature` must carry. */
  refundNonce: bigint;
}

export interface ClaimPolicy {
  /** Claim once this much (atomic units, over every channel) is accepted but unclaimed. */
  minClaimAmount: bigint;
  /** Claim anything unclaimed at least this often (well inside the withdraw delay). */
  claimIntervalMs: number;
  /** Refund a channel with no request for this long (0: never). */
  idleRefundMs: number;
}

export type ClaimReason = "withdrawal" | "amount" | "interval";

export interface ClaimPlan {
  /** Channels to claim now (empty when nothing is due), and why. */
  claim: string[];
  reason: ClaimReason | undefined;
  /** Accepted but unclaimed, over every channel (atomic units). */
  unclaimed: bigint;
  /** Channels whose charges exceed their confirmed balance: left out until the deposit confirms. */
  unconfirmed: string[];
  /** Channels whose record is behind the chain's claimed total: the record is raised to it. */
  behind: { channelId: string; totalClaimed: bigint }[];
  /** At most one idle channel to refund now (refunds go one at a time). */
  refund: string | undefined;
}

const claimedOf = (c: ChannelRecord, chain: OnChainChannel | undefined): bigint => {
  const recorded = BigInt(c.totalClaimed);
  return chain && chain.totalClaimed > recorded ? chain.totalClaimed : recorded;
};

/**
 * The payer's refund request the worker sends now: submitted (payment-verifier's Settle asked for
 * it) and still holding the channel's lock. Such a channel is claimed in its refund's transaction.
 */
export function refundRequested(c: ChannelRecord, now: number): RefundRequest | undefined {
  const q = c.refundRequest;
  const p = c.pendingRequest;
  if (!q?.submitted || !p || p.pendingId !== q.id || p.expiresAt <= now) return undefined;
  return q;
}

/** What a requested refund returns: what is unspent (or the part asked for), after claiming the charges. */
export function refundAmount(
  charged: bigint,
  chain: OnChainChannel,
  requested: string,
): { amount: bigint; claim: boolean } | { refused: "no_balance" | "unconfirmed" | "behind" } {
  // A deposit still unconfirmed: its vouchers cannot be claimed yet (the claim would revert).
  if (charged > chain.balance) return { refused: "unconfirmed" };
  // Claimed beyond the record's charges: the record is not the channel's (never refund from it).
  if (chain.totalClaimed > charged) return { refused: "behind" };
  const available = chain.balance - charged;
  if (available <= 0n) return { refused: "no_balance" };
  const asked = requested === "" ? available : BigInt(requested);
  return { amount: asked < available ? asked : available, claim: charged > chain.totalClaimed };
}

/** Whether a request holds the channel right now (the SDK's own rule: never act under it). */
function busy(c: ChannelRecord, now: number): boolean {
  return c.pendingRequest !== undefined && c.pendingRequest.expiresAt > now;
}

/**
 * What to do on this pass. `onchain` holds the confirmed state of every channel with something
 * unclaimed or refundable; `lastClaimAt` is when claims last ran (or this replica took over).
 */
export function planClaims(
  channels: readonly ChannelRecord[],
  onchain: ReadonlyMap<string, OnChainChannel>,
  policy: ClaimPolicy,
  now: number,
  lastClaimAt: number,
): ClaimPlan {
  const claimable: string[] = [];
  const unconfirmed: string[] = [];
  const behind: ClaimPlan["behind"] = [];
  let unclaimed = 0n;
  let withdrawal = false;
  let refund: string | undefined;
  for (const c of channels) {
    // Claimed in its refund's own transaction (and held by it: nothing else acts on it meanwhile).
    if (refundRequested(c, now)) continue;
    const chain = onchain.get(c.channelId.toLowerCase());
    const claimed = claimedOf(c, chain);
    if (chain && chain.totalClaimed > BigInt(c.totalClaimed))
      behind.push({ channelId: c.channelId, totalClaimed: chain.totalClaimed });
    const charged = BigInt(c.chargedCumulativeAmount);
    if (charged > claimed) {
      unclaimed += charged - claimed;
      if (!chain || charged > chain.balance) unconfirmed.push(c.channelId);
      else {
        claimable.push(c.channelId);
        if (chain.withdrawing) withdrawal = true;
      }
    }
    if (
      refund === undefined &&
      policy.idleRefundMs > 0 &&
      chain !== undefined &&
      !busy(c, now) &&
      now - c.lastRequestTimestamp >= policy.idleRefundMs &&
      // The record's balance must be the confirmed one: the refund pays out balance minus charges.
      BigInt(c.balance) === chain.balance &&
      chain.balance > (charged > claimed ? charged : claimed) &&
      charged <= chain.balance
    ) {
      refund = c.channelId;
    }
  }
  const confirmed = claimable.length > 0;
  const reason: ClaimReason | undefined = !confirmed
    ? undefined
    : withdrawal
      ? "withdrawal"
      : unclaimed >= policy.minClaimAmount
        ? "amount"
        : now - lastClaimAt >= policy.claimIntervalMs
          ? "interval"
          : undefined;
  return { claim: reason ? claimable : [], reason, unclaimed, unconfirmed, behind, refund };
}

/**
 * The claim interval when none is configured: a quarter of the withdraw delay, at most an hour, so
 * several passes (and retries) fit before a payer could withdraw what it owes.
 */
export function defaultClaimIntervalSeconds(withdrawDelaySeconds: number): number {
  return Math.max(60, Math.min(3_600, Math.floor(withdrawDelaySeconds / 4)));
}

/** A log of the batch settlement contract, as the receipt of our transaction has it. */
export type BatchLog =
  | { kind: "claimed"; logIndex: number; channelId: string; amount: bigint; totalClaimed: bigint }
  | { kind: "settled"; logIndex: number; receiver: string; amount: bigint }
  | { kind: "refunded"; logIndex: number; channelId: string; amount: bigint };

export interface EventContext {
  /** CAIP-2 of the settlement chain. */
  network: string;
  asset: string;
  /** The batch settlement contract: who pays the receiver on a settle. */
  escrow: string;
  transaction: string;
  /** The payer of each channel (lowercase id), from the records read before the transaction. */
  payers: ReadonlyMap<string, string>;
  reason: string;
  time: number;
  /** The gateway's request id of a payer's refund request, when the transaction answers one. */
  requestId?: string;
}

/** One settlement event per money-moving log; its id is the chain's own (network, tx, log index). */
export interface BatchEvent {
  id: string;
  request_id: string | null;
  endpoint: null;
  network: null;
  scheme: "x402-batch";
  payer: string;
  amount: string;
  asset: string;
  payment_network: string;
  outcome: "claimed" | "channel_settled" | "refunded";
  transaction: string;
  channel: string | null;
  cumulative: string | null;
  reason: string;
  time: string;
}

export function batchEvents(logs: readonly BatchLog[], ctx: EventContext): BatchEvent[] {
  const tx = ctx.transaction.toLowerCase();
  const chainId = ctx.network.replace(/^eip155:/, "");
  return logs.map((log) => {
    const channel = log.kind === "settled" ? null : log.channelId.toLowerCase();
    return {
      id: `x402-batch:${chainId}:${tx}:${log.logIndex}`,
      request_id: ctx.requestId ?? null,
      endpoint: null,
      network: null,
      scheme: "x402-batch",
      payer: channel ? (ctx.payers.get(channel) ?? "unknown") : ctx.escrow,
      amount: String(log.amount),
      asset: ctx.asset,
      payment_network: ctx.network,
      outcome: log.kind === "settled" ? "channel_settled" : log.kind,
      transaction: tx,
      channel,
      cumulative: log.kind === "claimed" ? String(log.totalClaimed) : null,
      reason: ctx.reason,
      time: new Date(ctx.time).toISOString(),
    };
  });
}
