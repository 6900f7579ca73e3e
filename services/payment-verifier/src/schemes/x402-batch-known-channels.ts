// Vouchers on known channels (x402-batch's SelfGuarded path): admitted, charged and released here
// with one Redis script each and no core reservation. The channel's lock (the SDK's pendingRequest,
// in the record every replica reads) holds one request at a time; a replayed voucher no longer
// continues what the channel charged, so it is answered with the corrective 402 and never served
// twice. Only vouchers whose signature and channel terms check out get here, so the answers given
// without the core's attempt limits (served, busy, corrective 402, over the deposit) all need the
// payer's key; anything else (a bad signature, other terms, a deposit, an unknown or stale channel)
// is left to the core's path, attempt limits included, and the SDK.

import { chainIdOf } from "@tollgate/payment-rails";
import type { PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/server";
import { ChannelIds, voucherSigner } from "../adapters/voucher-signer.ts";
import type { X402Config } from "../config.ts";
import type { PricedCall, SelfGuarded, SettleResult, Verdict } from "../core/types.ts";
import type { X402Protocol } from "../protocols/x402.ts";
import type { BatchVoucherStore, ChannelRecord } from "../stores/batch-vouchers.ts";
import {
  type BatchPayment,
  BELOW_CLAIMED,
  BUSY,
  type ChannelConfig,
  correctiveCode,
  describe,
  EXCEEDS_BALANCE,
  MISMATCH,
  NOT_VERIFIED,
  sameAddress,
  termsRefusal,
  type VoucherPayload,
} from "./x402-batch-credential.ts";

/** The scheme's code for each refusal of the admission script that carries the channel's record. */
const REFUSALS = {
  mismatch: MISMATCH,
  exceeds_balance: EXCEEDS_BALANCE,
  below_claimed: BELOW_CLAIMED,
} as const;

export const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";
/** The SDK's bounds on a channel's withdraw delay (MIN_WITHDRAW_DELAY, MAX_WITHDRAW_DELAY). */
const WITHDRAW_DELAY_RANGE = [900, 2_592_000] as const;
/** The SDK's bounds on how long a request holds a channel (pendingExpiresAt). */
export const PENDING_TTL_MS = [5_000, 10 * 60_000] as const;

/** What the known-channel path uses of its scheme. */
interface KnownChannelDeps {
  cfg: X402Config;
  server: BatchSettlementEvmScheme;
  vouchers: BatchVoucherStore;
  protocol: X402Protocol;
  /** The endpoint's offer the payment matches, if any. */
  matching(call: PricedCall, payment: BatchPayment): Promise<PaymentRequirements | undefined>;
  /** The scheme's offers for the call (the corrective 402 renders them). */
  offers(call: PricedCall): Promise<PaymentRequirements[]>;
}

export function knownChannelVouchers(d: KnownChannelDeps): SelfGuarded<BatchPayment> {
  const chainId = chainIdOf(d.cfg.network);
  const channelIds = new ChannelIds();

  async function admit(call: PricedCall, payment: BatchPayment, token: string): Promise<Verdict | undefined> {
    if (payment.type !== "voucher") return undefined;
    const { channelConfig: config, voucher: v } = payment.payload.payload as VoucherPayload;
    const cumulative = v.maxClaimableAmount;
    // A smart-wallet payer (no payer authorizer) or an amount not written canonically: the SDK decides.
    if (sameAddress(config.payerAuthorizer, ZERO_ADDRESS) || BigInt(cumulative).toString() !== cumulative)
      return undefined;
    if (termsRefusal(d.cfg, call, payment)) return undefined;
    const requirements = await d.matching(call, payment);
    const channelId = v.channelId.toLowerCase();
    if (!requirements || !channelTermsHold(channelIds, chainId, config, channelId, requirements))
      return undefined;
    if (voucherSigner(chainId, v) !== config.payerAuthorizer.toLowerCase()) return undefined;
    const now = Date.now();
    const ttl = Math.max(PENDING_TTL_MS[0], (requirements.maxTimeoutSeconds ?? 0) * 1000);
    const admitted = await d.vouchers.admit({
      channelId,
      cumulative,
      charged: (BigInt(cumulative) - BigInt(requirements.amount)).toString(),
      pendingId: token,
      requestId: call.requestId,
      now,
      expiresAt: now + Math.min(PENDING_TTL_MS[1], ttl),
      freshMs: d.server.getOnchainStateTtlMs(),
    });
    switch (admitted.kind) {
      case "unknown":
        return undefined;
      case "reserved":
        return { ok: true, hold: admitted.pendingId };
      case "busy":
        return { ok: false, code: "payment_invalid", reason: describe(BUSY) };
      default: {
        const refusal = REFUSALS[admitted.kind];
        // The SDK's corrective offer reads the channel from here instead of from Redis again.
        d.server.rememberChannelSnapshot(payment.payload, JSON.parse(admitted.record));
        const code = correctiveCode(refusal) ?? refusal;
        const challenge = await d.protocol.render(call, await d.offers(call), code, payment.payload);
        const reason = describe(refusal);
        return { ok: false, code: "payment_invalid", reason, challenge };
      }
    }
  }

  /** Charges the call a voucher admitted (the SDK's handleBeforeSettle, one script). */
  async function commit(call: PricedCall, payment: BatchPayment, token: string): Promise<SettleResult> {
    const requirements = await d.matching(call, payment);
    if (!requirements) {
      return NOT_VERIFIED;
    }
    const { voucher: v } = payment.payload.payload as VoucherPayload;
    const cumulative = v.maxClaimableAmount;
    const charged = (BigInt(cumulative) - BigInt(requirements.amount)).toString();
    const done = await d.vouchers.commit(
      v.channelId.toLowerCase(),
      token,
      call.requestId,
      { cumulative, charged, signature: v.signature },
      Date.now(),
    );
    const network = requirements.network;
    if (done.kind === "lost" || done.kind === "missing") {
      // As the SDK answers: the lock lapsed and another request took the channel; nothing charged.
      const errorReason = done.kind === "lost" ? BUSY : "invalid_batch_settlement_evm_missing_channel";
      const reason = `settlement failed: ${describe(errorReason)}`;
      return {
        ok: false,
        code: "payment_invalid",
        reason,
        transaction: "",
        receipt: [
          d.protocol.receipt({
            success: false,
            errorReason,
            errorMessage: reason,
            transaction: "",
            network,
          }),
        ],
      };
    }
    return {
      ok: true,
      collection: { kind: "accrual", channel: payment.channelId, amount: requirements.amount, cumulative },
      receipt: [d.protocol.receipt(voucherReceipt(done.record, payment, requirements))],
    };
  }

  return {
    admit: (call, parsed, token) => admit(call, parsed.payload, token),
    commit: (call, parsed, token) => commit(call, parsed.payload, token),
    release: (requestId, parsed, token) =>
      d.vouchers.release(parsed.payload.channelId.toLowerCase(), token, requestId),
    undo: async (call, parsed, token) => {
      const requirements = await d.matching(call, parsed.payload);
      if (!requirements) return false;
      const { voucher: v } = parsed.payload.payload.payload as VoucherPayload;
      const cumulative = v.maxClaimableAmount;
      return d.vouchers.uncommit(v.channelId.toLowerCase(), token, {
        cumulative,
        charged: (BigInt(cumulative) - BigInt(requirements.amount)).toString(),
      });
    },
  };
}

/** The SDK's validateChannelConfig: the channel (id `channelId`, lowercase) is one of this API's terms. */
export function channelTermsHold(
  channelIds: ChannelIds,
  chainId: number,
  config: ChannelConfig,
  channelId: string,
  requirements: PaymentRequirements,
): boolean {
  const extra = requirements.extra as { receiverAuthorizer?: unknown; withdrawDelay?: unknown };
  return (
    channelIds.of(config, chainId) === channelId &&
    sameAddress(config.receiver, requirements.payTo) &&
    typeof extra.receiverAuthorizer === "string" &&
    sameAddress(config.receiverAuthorizer, extra.receiverAuthorizer) &&
    sameAddress(config.token, requirements.asset) &&
    (extra.withdrawDelay === undefined || config.withdrawDelay === Number(extra.withdrawDelay)) &&
    config.withdrawDelay >= WITHDRAW_DELAY_RANGE[0] &&
    config.withdrawDelay <= WITHDRAW_DELAY_RANGE[1]
  );
}

/** The SDK's receipt for a charged voucher: what it charged and the channel's state after it. */
function voucherReceipt(
  before: ChannelRecord,
  payment: BatchPayment,
  requirements: PaymentRequirements,
): SettleResponse {
  return {
    success: true,
    payer: payment.payer.toLowerCase() as `0x${string}`,
    transaction: "",
    network: requirements.network,
    amount: "",
    extra: {
      channelState: {
        channelId: before.channelId,
        balance: before.balance,
        totalClaimed: before.totalClaimed,
        withdrawRequestedAt: before.withdrawRequestedAt,
        refundNonce: String(before.refundNonce),
        chargedCumulativeAmount: payment.cumulative,
      },
      chargedAmount: requirements.amount,
    },
  };
}
