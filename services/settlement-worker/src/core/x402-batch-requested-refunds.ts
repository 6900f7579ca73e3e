// The refunds payers ask for, the claimer's part (payment-verifier takes them: libs/payment-rails
// batch-refunds.ts): the channel's confirmed state decides what is unspent, and one transaction
// claims what the channel charged and returns the rest (or the part asked for). Its outcome is
// written for payment-verifier, the record deleted (refunded in full, as the SDK's own refund does),
// updated (in part) or let go (refused, nothing sent); one whose outcome is unknown keeps the
// channel held until its lock lapses, and its intent open, so nothing is served on a balance that
// may be gone and a later pass journals whatever landed.
import type { RefundOutcome, RefundRequest } from "@tollgate/payment-rails";
import type {
  RecordAfter,
  RefundRequests,
  RefundSender,
  RefundSent,
} from "../adapters/x402-batch-refunds.ts";
import {
  type BatchEvent,
  type ChannelRecord,
  type OnChainChannel,
  refundAmount,
} from "./x402-batch-claims.ts";

const NO_BALANCE = "invalid_batch_settlement_evm_refund_no_balance";
/** Tollgate's code (payment-verifier's too): one refund per channel per deposit. */
const ALREADY_REFUNDED = "invalid_batch_settlement_evm_refund_already_sent";

export interface RequestedRefundDeps {
  ports: {
    chain: { channels(ids: readonly string[]): Promise<Map<string, OnChainChannel>> };
    manager: { refundRequested: RefundSender };
    refunds: RefundRequests;
  };
  observe: {
    refunded(kind: "requested", transaction: string): void;
    failed(operation: "refund", err: unknown): void;
  };
  now: () => number;
  /** Runs `act` (which sends one transaction) under the lease's fence and an intent (the claimer's). */
  send<T>(channel: string, payers: Map<string, string>, reason: string, act: () => Promise<T>): Promise<T>;
  /** Journals a transaction's money-moving logs as events, naming the request. */
  record(
    transaction: string,
    payers: Map<string, string>,
    reason: string,
    out: BatchEvent[],
    requestId?: string,
  ): Promise<void>;
}

/** Sends one payer's refund request (see refundRequested); what it sent, if anything. */
export function requestedRefunds(d: RequestedRefundDeps) {
  // The request is taken (its lock held on, the record's chain state marked stale) only when
  // something will be sent; its outcome is written for payment-verifier before the events are
  // journaled (a failure there leaves the intent open: the next pass journals them from the chain).
  return async (
    c: ChannelRecord,
    request: RefundRequest,
    payers: Map<string, string>,
    out: BatchEvent[],
  ): Promise<{ channel: string; transaction: string } | undefined> => {
    const channel = c.channelId.toLowerCase();
    const base = {
      id: request.id,
      channelId: channel,
      cumulative: request.cumulative,
      requested: request.amount,
    };
    const chain = (await d.ports.chain.channels([channel])).get(channel);
    if (!chain) return undefined;
    const plan = refundAmount(BigInt(c.chargedCumulativeAmount), chain, request.amount);
    if ("refused" in plan) {
      // A deposit not confirmed yet: its charges are claimable on a later pass, the refund with them.
      if (plan.refused === "unconfirmed") return undefined;
      const outcome: RefundOutcome =
        plan.refused === "no_balance"
          ? {
              ...base,
              ok: false,
              errorReason: NO_BALANCE,
              errorMessage: "nothing unspent is left",
              transaction: "",
            }
          : {
              ...base,
              ok: false,
              errorReason: "invalid_batch_settlement_evm_refund_payload",
              errorMessage: "the channel's record is behind the chain's claimed total",
              transaction: "",
            };
      await d.ports.refunds.complete(channel, outcome, { kind: "unlock" }, d.now());
      return undefined;
    }
    const took = await d.ports.refunds.take(channel, request.id, d.now(), chain, plan.amount);
    if (took.kind === "refunded" && took.mark.id === request.id) {
      // This request's own refund, sent on an earlier pass whose outcome was unknown, landed: answer
      // it (its transaction is journaled from the chain by the open intent) and send nothing again.
      const charged = BigInt(c.chargedCumulativeAmount);
      const outcome: RefundOutcome = {
        ...base,
        ok: true,
        transaction: "",
        amount: took.mark.amount,
        channelState: {
          channelId: channel,
          balance: String(chain.balance),
          totalClaimed: String(chain.totalClaimed),
          withdrawRequestedAt: 0,
          refundNonce: String(chain.refundNonce),
          chargedCumulativeAmount: String(charged),
        },
      };
      const after: RecordAfter =
        chain.balance <= charged
          ? { kind: "delete" }
          : {
              kind: "update",
              balance: chain.balance,
              totalClaimed: chain.totalClaimed,
              refundNonce: chain.refundNonce,
            };
      await d.ports.refunds.complete(channel, outcome, after, d.now());
      return undefined;
    }
    if (took.kind === "refunded") {
      // A refund of this deposit landed already (its answer lost, or the record behind the chain):
      // one per deposit, so nothing is sent.
      const outcome: RefundOutcome = {
        ...base,
        ok: false,
        errorReason: ALREADY_REFUNDED,
        errorMessage: `this channel's deposit was refunded already (request ${took.mark.id}); one refund per deposit`,
        transaction: "",
      };
      await d.ports.refunds.complete(channel, outcome, { kind: "unlock" }, d.now());
      return undefined;
    }
    // Gone (the lock lapsed): nothing is sent; its Settle answered (or will answer) 503.
    if (took.kind === "gone" || took.record.chargedCumulativeAmount !== c.chargedCumulativeAmount)
      return undefined;
    const taken = took.record;
    const reason = "refund: requested by the payer";
    const { balance: before, refundNonce: nonce } = chain;
    return d.send(channel, payers, reason, async () => {
      let sent: RefundSent;
      try {
        sent = await d.ports.manager.refundRequested(taken, chain, plan.amount, plan.claim);
      } catch (err) {
        const errorMessage = err instanceof Error ? err.message : String(err);
        const unknown: RefundOutcome = {
          ...base,
          ok: false,
          unknown: true,
          errorReason: "settlement_pending",
          errorMessage,
          transaction: "",
        };
        // The lock stays until it lapses: a transaction may still land.
        await d.ports.refunds.complete(channel, unknown, { kind: "keep" }, d.now()).catch(() => undefined);
        throw err;
      }
      if (!sent.success) {
        const pending = sent.errorReason === "settlement_pending";
        const outcome: RefundOutcome = {
          ...base,
          ok: false,
          ...(pending ? { unknown: true } : {}),
          errorReason: sent.errorReason,
          errorMessage: sent.errorMessage,
          transaction: sent.transaction,
        };
        // Refused or reverted (nothing moved): let go; broadcast and unconfirmed: kept until it
        // lapses, and the intent left open (thrown) so a later pass journals what lands.
        await d.ports.refunds.complete(
          channel,
          outcome,
          pending ? { kind: "keep" } : { kind: "unlock" },
          d.now(),
        );
        const failure = new Error(`${sent.errorReason}: ${sent.errorMessage}`);
        if (pending) throw failure;
        d.observe.failed("refund", failure);
        return undefined;
      }
      const charged = BigInt(taken.chargedCumulativeAmount);
      const balance = before - sent.amount;
      const refundNonce = nonce + 1n;
      const outcome: RefundOutcome = {
        ...base,
        ok: true,
        transaction: sent.transaction,
        amount: String(sent.amount),
        channelState: {
          channelId: channel,
          balance: String(balance),
          totalClaimed: String(charged),
          withdrawRequestedAt: Number(sent.channelState?.withdrawRequestedAt ?? 0),
          refundNonce: String(refundNonce),
          chargedCumulativeAmount: String(charged),
        },
      };
      // Refunded in full: the record goes (the SDK's rule); in part: the channel after it.
      const after: RecordAfter =
        balance <= charged
          ? { kind: "delete" }
          : { kind: "update", balance, totalClaimed: charged, refundNonce };
      await d.ports.refunds.complete(channel, outcome, after, d.now());
      d.observe.refunded("requested", sent.transaction);
      await d.record(sent.transaction, payers, reason, out, request.requestId);
      return { channel, transaction: sent.transaction };
    });
  };
}
