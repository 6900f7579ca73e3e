// What the x402-batch scheme reads and checks of a credential on its own: the payload (a deposit
// or a voucher on a channel, or the payer's cooperative refund request) and the payment it is
// (keyed by channel and cumulative amount), the channel's terms against this API's, and the
// plain-language reasons for the scheme's refusal codes, which every path of the scheme answers with.
import { BATCH_SCHEME, priceAtomic } from "@tollgate/catalog";
import type { PaymentPayload } from "@x402/core/types";
import { z } from "zod";
import type { X402Config } from "../config.ts";
import type { Claim, PricedCall, SettleResult } from "../core/types.ts";
import { address, hex32, signatureHex, uint256 } from "./eip712-fields.ts";

/** The SDK's name for the scheme; the spec's `x402-batch` is offered beside it (the catalog's names). */
export const SDK_SCHEME = BATCH_SCHEME.official;
export const SPEC_SCHEME = BATCH_SCHEME.spec;

/** A Settle for a payment this scheme did not verify for the call. */
export const NOT_VERIFIED: SettleResult = {
  ok: false,
  code: "payment_invalid",
  reason: "the payment was not verified for this call",
  transaction: "",
  receipt: [],
};

const uint = uint256;
const hex = signatureHex;
const channelConfig = z.object({
  payer: address,
  payerAuthorizer: address,
  receiver: address,
  receiverAuthorizer: address,
  token: address,
  withdrawDelay: z
    .number()
    .int()
    .min(0)
    .max(2 ** 40 - 1), // uint40 on chain
  salt: hex32,
});
const voucher = z.object({
  channelId: hex32,
  maxClaimableAmount: uint,
  signature: hex,
});
/**
 * The deposit's token authorization, checked here so the SDK never converts a malformed field:
 * exactly one kind (the SDK takes Permit2 when its key is there at all, valid or not).
 */
const depositAuthorization = z.union([
  z.strictObject({
    erc3009Authorization: z.object({ validAfter: uint, validBefore: uint, salt: hex32, signature: hex }),
  }),
  z.strictObject({
    permit2Authorization: z.object({
      from: address,
      permitted: z.object({ token: address, amount: uint }),
      spender: address,
      nonce: uint,
      deadline: uint,
      witness: z.object({ channelId: hex32 }),
      signature: hex,
    }),
  }),
]);
const batchPayload = z.discriminatedUnion("type", [
  z.object({ type: z.literal("voucher"), channelConfig, voucher }),
  z.object({
    type: z.literal("deposit"),
    channelConfig,
    voucher,
    deposit: z.object({ amount: uint, authorization: depositAuthorization }).loose(),
  }),
  // A partial amount is a positive integer; absent, everything unspent (the spec's refund payload).
  z.object({ type: z.literal("refund"), channelConfig, voucher, amount: uint.optional() }).loose(),
]);

export interface BatchPayment {
  /** The payload as the SDK reads it: `accepted.scheme` is "batch-settlement". */
  payload: PaymentPayload;
  type: "voucher" | "deposit" | "refund";
  channelId: `0x${string}`;
  payer: `0x${string}`;
  /** The voucher's cumulative amount, atomic units. */
  cumulative: string;
  /** A refund's partial amount (atomic units); "" for everything unspent. */
  refundAmount: string;
}

/** Plain-language reasons for the scheme's refusal codes. */
const REASONS: Record<string, string> = {
  invalid_batch_settlement_evm_channel_busy:
    "another request on this payment channel is in progress; retry when it has finished",
  invalid_batch_settlement_evm_cumulative_amount_mismatch:
    "the voucher's cumulative amount is not the channel's charged amount plus this price; the offer carries the channel's state to resynchronise",
  invalid_batch_settlement_evm_cumulative_exceeds_balance:
    "the voucher exceeds the channel's deposit; deposit more (top up) and sign again",
  invalid_batch_settlement_evm_cumulative_below_claimed:
    "the voucher is below what was already claimed on chain",
  invalid_batch_settlement_evm_voucher_signature: "the voucher signature does not match the channel's payer",
  invalid_batch_settlement_evm_deposit_below_min_deposit:
    "the deposit is below the announced minimum deposit",
  invalid_batch_settlement_evm_refund_no_balance:
    "nothing unspent is left in the channel to refund (its deposit equals what was charged)",
  invalid_batch_settlement_evm_refund_amount_invalid:
    "the refund amount must be a positive integer, at least the minimum refund",
  invalid_batch_settlement_evm_refund_already_sent:
    "this channel's deposit was refunded already: one refund per deposit, whatever the amount",
  invalid_batch_settlement_evm_missing_channel:
    "Tollgate has no record of this channel: it was never paid here, or it was refunded in full already; its deposit, if any, is withdrawn on chain after the withdraw delay",
};

export const BUSY = "invalid_batch_settlement_evm_channel_busy";
export const MISMATCH = "invalid_batch_settlement_evm_cumulative_amount_mismatch";
export const BELOW_CLAIMED = "invalid_batch_settlement_evm_cumulative_below_claimed";
export const EXCEEDS_BALANCE = "invalid_batch_settlement_evm_cumulative_exceeds_balance";

/**
 * The code of the corrective 402 (the channel's state attached) a refusal is answered with, if any.
 * The official client resynchronises only on a mismatch or below-claimed code. It tops up before it
 * signs past the balance it knows, so a voucher over the deposit means that balance is stale (the
 * channel was refunded while idle): answered as a mismatch, the client re-reads the channel on
 * chain and deposits again instead of being refused for ever.
 */
export function correctiveCode(code: string | undefined): string | undefined {
  if (code === MISMATCH || code === EXCEEDS_BALANCE) return MISMATCH;
  return code === BELOW_CLAIMED ? code : undefined;
}

export function describe(code: string | undefined, message?: string): string {
  if (!code) return message || "the payment was refused";
  const text = REASONS[code];
  return text ? `${text} (${code})` : message ? `${code}: ${message}` : code;
}

export function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

export type ChannelConfig = z.infer<typeof channelConfig>;
export type VoucherPayload = { channelConfig: ChannelConfig; voucher: z.infer<typeof voucher> };

/** A batch payload (its scheme already checked: either name) as the payment it is, or why it is none. */
export function claimBatch(payload: PaymentPayload): Claim<BatchPayment> {
  const inner = batchPayload.safeParse(payload.payload);
  if (!inner.success) {
    const issue = inner.error.issues[0];
    return {
      kind: "invalid",
      reason: `the x402-batch payload must be a deposit, a voucher or a refund: payload.${issue?.path.join(".")}: ${issue?.message}`,
    };
  }
  const p = inner.data;
  const refund = p.type === "refund";
  const refundAmount = refund && p.amount !== undefined ? BigInt(p.amount).toString() : "";
  if (refund && refundAmount !== "" && BigInt(refundAmount) === 0n) {
    return { kind: "invalid", reason: describe("invalid_batch_settlement_evm_refund_amount_invalid") };
  }
  // The SDK reads the scheme by its own name; the voucher and deposit do not depend on it.
  const normalized: PaymentPayload = { ...payload, accepted: { ...payload.accepted, scheme: SDK_SCHEME } };
  const chain = payload.accepted.network.replace(/^eip155:/, "");
  const channel = p.voucher.channelId.toLowerCase();
  return {
    kind: "payment",
    payment: {
      // A refund's voucher repeats the last paid voucher's amount: its key is of its own kind.
      key: refund
        ? `x402-batch-refund:${chain}:${channel}:${p.voucher.maxClaimableAmount}:${refundAmount || "all"}`
        : `x402-batch:${chain}:${channel}:${p.voucher.maxClaimableAmount}`,
      payer: p.channelConfig.payer,
      // A refund charges nothing (its events, a failed one included, say so).
      amount: refund ? "0" : payload.accepted.amount,
      asset: payload.accepted.asset,
      paymentNetwork: payload.accepted.network,
      // A deposit is sent by us from the payer's balance (gas ours); a voucher sends nothing.
      ...(p.type === "deposit" ? { draw: p.deposit.amount } : {}),
      // A refund is a channel action: no node call (the settlement worker sends it).
      ...(refund ? { noService: true } : {}),
      payload: {
        payload: normalized,
        type: p.type,
        channelId: p.voucher.channelId as `0x${string}`,
        payer: p.channelConfig.payer as `0x${string}`,
        cumulative: p.voucher.maxClaimableAmount,
        refundAmount,
      },
    },
  };
}

/** Our own checks of the channel's terms, each with a precise reason, before the SDK's. */
export function termsRefusal(cfg: X402Config, call: PricedCall, payment: BatchPayment): string | undefined {
  const { accepted } = payment.payload;
  const config = (payment.payload.payload as { channelConfig: ChannelConfig }).channelConfig;
  if (accepted.network !== cfg.network) {
    return `the payment is for network ${accepted.network}, but this API settles on ${cfg.network}`;
  }
  if (!sameAddress(accepted.asset, cfg.asset) || !sameAddress(config.token, cfg.asset)) {
    return `the channel is in token ${config.token}, but this API takes ${cfg.assetSymbol} ${cfg.asset}`;
  }
  if (!sameAddress(accepted.payTo, cfg.payTo) || !sameAddress(config.receiver, cfg.payTo)) {
    return `the channel pays ${config.receiver}, but this API's receiver is ${cfg.payTo}`;
  }
  const price = priceAtomic(call.endpoint.price, cfg.assetDecimals);
  if (BigInt(accepted.amount) !== price) {
    return `the voucher is for ${accepted.amount} atomic units, ${call.endpoint.path} costs ${price} (${call.endpoint.price} USD)`;
  }
  return undefined;
}
