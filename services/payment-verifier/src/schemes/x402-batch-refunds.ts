// The x402-batch cooperative refund (the official client's `refund()`: a GET of a paid URL carrying
// a `refund` payload, a zero-charge voucher at the channel's charged total). Answered here, sent by
// the settlement worker: the one claimer sends every claim and refund of the receiver, so a refund
// never races a claim of another process, and its one transaction claims what was charged and
// returns the rest (libs/payment-rails batch-refunds.ts).
//
// Verify checks the request locally: this API's channel terms, and the voucher's signature by the
// channel's payer authorizer (only the payer can ask), then takes the channel's lock for it (one
// script, stores/batch-refunds.ts): at the charged total (else the corrective 402), something
// unspent, no other request in flight, a settlement worker holding the claim lease; and, as a
// refund's gas is ours: one per channel per deposit (the worker's mark; a later request is answered
// with the first), none below the minimum refund, a payer's refunds per hour bounded across
// replicas. No node call, no facilitator call. Settle submits it and waits for the worker's outcome (it sends on its next
// pass) to answer with the spec's receipt: the refund's transaction and amount, the channel after
// it. A wait that outlives the caller's deadline answers 503; the refund still goes out, and the
// client's retry of it is answered from the outcome.
import { chainIdOf, REFUND_HOLD_MS, type RefundOutcome } from "@tollgate/payment-rails";
import type { Logger } from "@tollgate/platform";
import type { PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/server";
import { ChannelIds, voucherSigner } from "../adapters/voucher-signer.ts";
import type { X402Config } from "../config.ts";
import type { PricedCall, SettleResult, Verdict } from "../core/types.ts";
import type { X402Protocol } from "../protocols/x402.ts";
import type { BatchRefundStore, RefundPolicy } from "../stores/batch-refunds.ts";
import {
  type BatchPayment,
  BUSY,
  describe,
  MISMATCH,
  sameAddress,
  type VoucherPayload,
} from "./x402-batch-credential.ts";
import { channelTermsHold, PENDING_TTL_MS, ZERO_ADDRESS } from "./x402-batch-known-channels.ts";

const NO_BALANCE = "invalid_batch_settlement_evm_refund_no_balance";
/** The SDK's own code: its client gives up on it at once (a final refusal), its state untouched. */
const AMOUNT_INVALID = "invalid_batch_settlement_evm_refund_amount_invalid";
/** Ours: the client reports it ("Refund failed: …") and keeps its state (a refund it already had). */
const ALREADY_REFUNDED = "invalid_batch_settlement_evm_refund_already_sent";
const MISSING = "invalid_batch_settlement_evm_missing_channel";
/** How often Settle looks for the worker's outcome. */
const POLL_MS = 200;
/** How long Settle waits when its caller named no deadline. */
const DEFAULT_WAIT_MS = 25_000;
/** Settle answers this long before its caller's deadline. */
const DEADLINE_MARGIN_MS = 500;

export interface RefundDeps {
  cfg: X402Config;
  server: BatchSettlementEvmScheme;
  refunds: BatchRefundStore;
  /** The refund policy the store applies (for the refusals' texts). */
  policy: RefundPolicy;
  protocol: X402Protocol;
  logger: Logger;
  matching(call: PricedCall, payment: BatchPayment): Promise<PaymentRequirements | undefined>;
  offers(call: PricedCall): Promise<PaymentRequirements[]>;
  newId(): string;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export interface BatchRefunds {
  verify(call: PricedCall, payment: BatchPayment): Promise<Verdict>;
  settle(payment: BatchPayment, hold: string, deadline: number): Promise<SettleResult>;
  release(payment: BatchPayment, hold: string): Promise<void>;
}

export function batchRefunds(d: RefundDeps): BatchRefunds {
  const chainId = chainIdOf(d.cfg.network);
  const channelIds = new ChannelIds();
  const now = d.now ?? Date.now;
  const sleep = d.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));

  /** A refusal whose offers carry the SDK's code (the official client tells final ones by it). */
  const refusal = async (
    call: PricedCall,
    payment: BatchPayment,
    code: string,
    final = false,
    reason = describe(code),
  ): Promise<Verdict> => ({
    ok: false,
    code: "payment_invalid",
    reason,
    challenge: await d.protocol.render(call, await d.offers(call), code, payment.payload),
    ...(final ? { final } : {}),
  });

  async function verify(call: PricedCall, payment: BatchPayment): Promise<Verdict> {
    const { channelConfig: config, voucher: v } = payment.payload.payload as VoucherPayload;
    const invalid = (reason: string): Verdict => ({
      ok: false,
      code: "payment_invalid",
      reason,
      final: true,
    });
    if (sameAddress(config.payerAuthorizer, ZERO_ADDRESS)) {
      // A smart wallet's voucher needs the chain (EIP-1271): its channel is refunded when idle.
      return invalid(
        "refund requests are taken for channels with a payer authorizer (an EOA); this channel is refunded when idle, or withdrawn on chain",
      );
    }
    if (BigInt(v.maxClaimableAmount).toString() !== v.maxClaimableAmount)
      return invalid("the refund voucher's amount must be a canonical decimal integer");
    const requirements = await d.matching(call, payment);
    const channelId = v.channelId.toLowerCase();
    if (!requirements || !channelTermsHold(channelIds, chainId, config, channelId, requirements)) {
      return invalid("the refund's channel is not one of this API's channels (see PAYMENT-REQUIRED)");
    }
    // Only the channel's payer can ask: the zero-charge voucher is signed by its payer authorizer.
    if (voucherSigner(chainId, v) !== config.payerAuthorizer.toLowerCase())
      return invalid(describe("invalid_batch_settlement_evm_voucher_signature"));
    const t = now();
    const ttl = Math.max(PENDING_TTL_MS[0], (requirements.maxTimeoutSeconds ?? 0) * 1000);
    const admitted = await d.refunds.admit({
      channelId,
      payer: config.payer,
      id: d.newId(),
      cumulative: v.maxClaimableAmount,
      amount: payment.refundAmount,
      requestId: call.requestId,
      now: t,
      expiresAt: t + Math.min(PENDING_TTL_MS[1], ttl),
    });
    switch (admitted.kind) {
      case "reserved":
      case "joined":
        return { ok: true, hold: admitted.id };
      case "refunded": {
        // One refund per deposit: the same request again (its answer lost) is answered with its
        // receipt; any other amount is refused with the first one's transaction, nothing sent.
        const first = await d.refunds.outcome(payment.channelId, admitted.id);
        if (
          first?.ok &&
          first.requested === payment.refundAmount &&
          first.cumulative === v.maxClaimableAmount
        )
          return { ok: true, hold: admitted.id };
        const sent = first?.ok
          ? ` (transaction ${first.transaction}, ${first.amount} atomic units returned)`
          : first?.transaction
            ? ` (transaction ${first.transaction})`
            : "";
        return refusal(
          call,
          payment,
          ALREADY_REFUNDED,
          true,
          `this channel's deposit was refunded already${sent}: one refund per deposit, whatever the amount; what is left is returned when the channel is idle, or withdrawn on chain after the withdraw delay (${ALREADY_REFUNDED})`,
        );
      }
      case "too_small": {
        const available = BigInt(admitted.balance) - BigInt(admitted.charged);
        const asked = payment.refundAmount === "" ? available : BigInt(payment.refundAmount);
        const minimum = d.policy.minimum;
        const reason =
          available < BigInt(minimum)
            ? `what is unspent (${available} atomic units) is below the minimum refund of ${minimum} (its gas at the configured gas price): it is returned when the channel is idle, or withdrawn on chain after the withdraw delay (${AMOUNT_INVALID})`
            : `the refund amount ${asked} is below the minimum refund of ${minimum} atomic units (its gas at the configured gas price): ask for at least ${minimum}, or for everything unspent (${available}) (${AMOUNT_INVALID})`;
        return refusal(call, payment, AMOUNT_INVALID, true, reason);
      }
      case "rate_limited":
        return {
          ok: false,
          code: "rate_limited",
          reason: `too many refunds for this payer: at most ${d.policy.perPayerPerHour} an hour across its channels; retry later`,
        };
      case "busy":
        return refusal(call, payment, BUSY);
      case "no_balance":
        return refusal(call, payment, NO_BALANCE, true);
      case "unknown":
        return refusal(call, payment, MISSING);
      case "no_claimer":
        return {
          ok: false,
          code: "service_unavailable",
          reason:
            "refunds are sent by the settlement worker, and none is claiming x402-batch channels right now; retry later",
        };
      default: {
        // The client's voucher is not at the channel's charged total: the corrective 402.
        d.server.rememberChannelSnapshot(payment.payload, JSON.parse(admitted.record));
        return refusal(call, payment, MISMATCH);
      }
    }
  }

  async function settle(payment: BatchPayment, hold: string, deadline: number): Promise<SettleResult> {
    const network = d.cfg.network;
    const t = now();
    const submitted = await d.refunds.submit(payment.channelId, hold, t, t + REFUND_HOLD_MS);
    if (submitted === "lost")
      return failed(network, BUSY, "the refund request lapsed before it was sent", "");
    const until = Math.min(
      Number.isFinite(deadline) ? deadline - DEADLINE_MARGIN_MS : Number.POSITIVE_INFINITY,
      t + DEFAULT_WAIT_MS,
    );
    for (;;) {
      const outcome = await d.refunds.outcome(payment.channelId, hold);
      if (outcome) return answer(network, payment, outcome);
      if (now() + POLL_MS > until) break;
      await sleep(POLL_MS);
    }
    d.logger.info({ channel: payment.channelId }, "x402-batch refund still queued at the caller's deadline");
    return {
      ok: false,
      code: "service_unavailable",
      reason:
        "the refund is queued: the settlement worker sends it on its next pass; send the same refund request again for its receipt",
      transaction: "",
      receipt: [],
    };
  }

  function answer(network: string, payment: BatchPayment, outcome: RefundOutcome): SettleResult {
    if (!outcome.ok && outcome.unknown) {
      return {
        ok: false,
        code: "service_unavailable",
        reason: `the refund's outcome is not known yet (${outcome.errorMessage}); the channel stays held until it is, then ask again`,
        transaction: outcome.transaction,
        receipt: [],
      };
    }
    if (!outcome.ok) return failed(network, outcome.errorReason, outcome.errorMessage, outcome.transaction);
    const receipt: SettleResponse = {
      success: true,
      transaction: outcome.transaction,
      network: network as SettleResponse["network"],
      payer: payment.payer,
      amount: outcome.amount,
      extra: { channelState: outcome.channelState },
    };
    return {
      ok: true,
      collection: {
        kind: "refund",
        channel: payment.channelId,
        amount: outcome.amount,
        cumulative: outcome.channelState.chargedCumulativeAmount,
        transaction: outcome.transaction,
      },
      receipt: [d.protocol.receipt(receipt)],
    };
  }

  function failed(network: string, errorReason: string, message: string, transaction: string): SettleResult {
    const reason = `refund failed: ${describe(errorReason, message)}`;
    return {
      ok: false,
      code: "payment_invalid",
      reason,
      transaction,
      receipt: [
        d.protocol.receipt({
          success: false,
          errorReason,
          errorMessage: reason,
          transaction,
          network: network as SettleResponse["network"],
        }),
      ],
    };
  }

  return {
    verify,
    settle,
    async release(payment, hold) {
      await d.refunds.release(payment.channelId, hold);
    },
  };
}
