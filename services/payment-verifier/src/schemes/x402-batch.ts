// x402 `x402-batch` (the spec's name) = the official `batch-settlement` scheme on EVM: the payer
// deposits once into a payment channel, then pays each call with an EIP-712 cumulative voucher
// checked off-chain; the settlement worker claims and settles vouchers in batches. The official
// BatchSettlementEvmScheme runs on the x402 protocol's shared resource server, with its channel
// state in Redis (RedisChannelStorage: compare-and-set in Lua, one request per channel at a time).
//
// The SDK keeps a request's channel reservation (its pending id) in memory between verify and
// settle; here Verify and Settle are two RPCs that may land on two replicas, so the pending id
// travels as the scheme's hold in the core's reservation, and the channel state comes back from
// Redis. Inside, the scheme is always named "batch-settlement" (the SDK compares that literal);
// the spec's name "x402-batch" is offered beside it and translated at this boundary.
//
// A voucher on a channel whose record is in Redis with fresh on-chain state (every call after the
// deposit) takes a shorter road that needs no chain call and no core reservation (see `guarded`):
// the same checks as the SDK's, one Redis script at Verify, one at Settle. Anything else (a
// deposit, an unknown or stale channel, a smart-wallet payer) goes through the SDK as before.
import { priceAtomic } from "@tollgate/catalog";
import { chainIdOf, type X402BatchConfig } from "@tollgate/payment-rails";
import type { Logger } from "@tollgate/platform";
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from "@x402/core/types";
import { SettleError, VerifyError } from "@x402/core/types";
import { BatchSettlementEvmScheme, type ChannelStorage } from "@x402/evm/batch-settlement/server";
import { encodeAbiParameters, type Hex, keccak256 } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { z } from "zod";
import type { SettlementChain } from "../adapters/settlement-chain.ts";
import { ChannelIds, voucherSigner } from "../adapters/voucher-signer.ts";
import type { X402Config } from "../config.ts";
import {
  type Claim,
  FacilitatorUnavailableError,
  type Header,
  type ParsedPayment,
  type PaymentMeta,
  type PaymentMethodInfo,
  type PaymentScheme,
  type PricedCall,
  type SelfGuarded,
  type SettleResult,
  type Verdict,
  type VerifiedPayment,
} from "../core/types.ts";
import type { X402Protocol } from "../protocols/x402.ts";
import type { BatchVoucherStore, ChannelRecord } from "../stores/batch-vouchers.ts";
import { address, hex32, signatureHex, uint256 } from "./eip712-fields.ts";

/** The SDK's name for the scheme; the spec's `x402-batch` is offered beside it. */
export const SDK_SCHEME = "batch-settlement";
/** A Settle for a payment this scheme did not verify for the call. */
const NOT_VERIFIED: SettleResult = {
  ok: false,
  code: "payment_invalid",
  reason: "the payment was not verified for this call",
  transaction: "",
  receipt: [],
};

const SPEC_SCHEME = "x402-batch";

/** How long a takeover waits for a deposit the dead owner may have sent to be mined. */
const TAKEOVER_WAIT_MS = 15_000;
const TAKEOVER_POLL_MS = 250;

/** How long a voucher's key stays reserved as used: the channel state refuses it after that anyway. */
const USED_VOUCHER_MS = 60 * 60_000;

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
  z.object({ type: z.literal("refund"), channelConfig, voucher }).loose(),
]);

export interface BatchPayment {
  /** The payload as the SDK reads it: `accepted.scheme` is "batch-settlement". */
  payload: PaymentPayload;
  type: "voucher" | "deposit" | "refund";
  channelId: `0x${string}`;
  payer: `0x${string}`;
  /** The voucher's cumulative amount, atomic units. */
  cumulative: string;
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
};

const BUSY = "invalid_batch_settlement_evm_channel_busy";
const MISMATCH = "invalid_batch_settlement_evm_cumulative_amount_mismatch";
const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";
/** The SDK's bounds on a channel's withdraw delay (MIN_WITHDRAW_DELAY, MAX_WITHDRAW_DELAY). */
const WITHDRAW_DELAY_RANGE = [900, 2_592_000] as const;
/** The SDK's bounds on how long a request holds a channel (pendingExpiresAt). */
const PENDING_TTL_MS = [5_000, 10 * 60_000] as const;

/** The SDK's refusal when it cannot read the channel's state (its store is unreachable). */
const STATE_UNAVAILABLE = "invalid_batch_settlement_evm_verification_state_unavailable";

/** Refusals whose answer carries the channel's state, so the official client can resynchronise. */
const CORRECTIVE = new Set([
  "invalid_batch_settlement_evm_cumulative_amount_mismatch",
  "invalid_batch_settlement_evm_cumulative_below_claimed",
]);

function describe(code: string | undefined, message?: string): string {
  if (!code) return message || "the payment was refused";
  const text = REASONS[code];
  return text ? `${text} (${code})` : message ? `${code}: ${message}` : code;
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

type VoucherPayload = { channelConfig: z.infer<typeof channelConfig>; voucher: z.infer<typeof voucher> };

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

export interface X402BatchDeps {
  protocol: X402Protocol;
  storage: ChannelStorage;
  /** The same channel records, one script per step, for vouchers on known channels. */
  vouchers: BatchVoucherStore;
  authorizer: PrivateKeyAccount;
  /** Reads the settlement chain: a deposit a dead replica sent is found by its authorization. */
  chain: SettlementChain | undefined;
  logger: Logger;
  onInitFailure: () => void;
}

export class X402BatchScheme implements PaymentScheme<PaymentPayload, PaymentRequirements, BatchPayment> {
  readonly name = SPEC_SCHEME;
  readonly protocol: X402Protocol;
  readonly #cfg: X402Config;
  readonly #terms: X402BatchConfig;
  readonly #deps: X402BatchDeps;
  readonly #server: BatchSettlementEvmScheme;
  readonly #requirements = new Map<string, PaymentRequirements>();
  readonly #chainId: number;
  readonly #channelIds = new ChannelIds();

  constructor(cfg: X402Config, terms: X402BatchConfig, deps: X402BatchDeps) {
    this.#cfg = cfg;
    this.#terms = terms;
    this.#deps = deps;
    this.protocol = deps.protocol;
    this.#chainId = chainIdOf(cfg.network);
    this.#server = new BatchSettlementEvmScheme(cfg.payTo, {
      storage: deps.storage,
      receiverAuthorizerSigner: deps.authorizer,
      withdrawDelay: terms.withdrawDelaySeconds,
    });
    deps.protocol.register({ network: cfg.network, server: this.#server });
  }

  /** The official server scheme (the settlement worker builds its channel manager from it). */
  get server(): BatchSettlementEvmScheme {
    return this.#server;
  }

  async init(): Promise<void> {
    try {
      await this.protocol.ready(SDK_SCHEME, this.#cfg.network);
    } catch (err) {
      if (this.protocol.unsupported(SDK_SCHEME, this.#cfg.network)) {
        throw new Error(
          `the x402 facilitator does not support scheme batch-settlement on ${this.#cfg.network}`,
        );
      }
      this.#deps.onInitFailure();
      throw err;
    }
  }

  /** The batch-settlement offer for a price: the same channel terms for every price. */
  async #requirementsFor(price: string): Promise<PaymentRequirements> {
    const cached = this.#requirements.get(price);
    if (cached) return cached;
    const server = await this.protocol.ready(SDK_SCHEME, this.#cfg.network);
    const { network, asset, assetName, assetVersion, assetDecimals, payTo, maxTimeoutSeconds } = this.#cfg;
    const [built] = await server.buildPaymentRequirements({
      scheme: SDK_SCHEME,
      network,
      payTo,
      price: {
        amount: priceAtomic(price, assetDecimals).toString(),
        asset,
        extra: { name: assetName, version: assetVersion, minDeposit: this.#terms.minDeposit },
      },
      maxTimeoutSeconds,
    });
    if (!built) throw new Error("the resource server built no batch-settlement offer");
    this.#requirements.set(price, built);
    return built;
  }

  /** Both names: `batch-settlement` for the official clients, `x402-batch` as the spec names it. */
  async offers(call: PricedCall): Promise<PaymentRequirements[]> {
    const offer = await this.#requirementsFor(call.endpoint.price);
    return [offer, { ...offer, scheme: SPEC_SCHEME }];
  }

  claim(payload: PaymentPayload): Claim<BatchPayment> {
    const scheme = payload.accepted.scheme;
    if (scheme !== SDK_SCHEME && scheme !== SPEC_SCHEME) return { kind: "not-mine" };
    const inner = batchPayload.safeParse(payload.payload);
    if (!inner.success) {
      const issue = inner.error.issues[0];
      return {
        kind: "invalid",
        reason: `the x402-batch payload must be a deposit or a voucher: payload.${issue?.path.join(".")}: ${issue?.message}`,
      };
    }
    const p = inner.data;
    if (p.type === "refund") {
      return {
        kind: "invalid",
        reason:
          "refund requests are not taken on API calls: idle channels are refunded by Tollgate, or withdraw on chain after the withdraw delay",
      };
    }
    // The SDK reads the scheme by its own name; the voucher and deposit do not depend on it.
    const normalized: PaymentPayload = { ...payload, accepted: { ...payload.accepted, scheme: SDK_SCHEME } };
    const chain = payload.accepted.network.replace(/^eip155:/, "");
    return {
      kind: "payment",
      payment: {
        key: `x402-batch:${chain}:${p.voucher.channelId.toLowerCase()}:${p.voucher.maxClaimableAmount}`,
        payer: p.channelConfig.payer,
        amount: payload.accepted.amount,
        asset: payload.accepted.asset,
        paymentNetwork: payload.accepted.network,
        // A deposit is sent by us from the payer's balance (gas ours); a voucher sends nothing.
        ...(p.type === "deposit" ? { draw: p.deposit.amount } : {}),
        payload: {
          payload: normalized,
          type: p.type,
          channelId: p.voucher.channelId as `0x${string}`,
          payer: p.channelConfig.payer as `0x${string}`,
          cumulative: p.voucher.maxClaimableAmount,
        },
      },
    };
  }

  /** Our own checks, each with a precise reason, before the SDK's. */
  #refusal(call: PricedCall, payment: BatchPayment): string | undefined {
    const { accepted } = payment.payload;
    const cfg = this.#cfg;
    const config = (payment.payload.payload as { channelConfig: z.infer<typeof channelConfig> })
      .channelConfig;
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

  async verify(call: PricedCall, parsed: ParsedPayment<BatchPayment>): Promise<Verdict> {
    const payment = parsed.payload;
    const refusal = this.#refusal(call, payment);
    if (refusal) return { ok: false, code: "payment_invalid", reason: refusal, final: true };
    const requirements = await this.#matching(call, payment);
    if (!requirements) {
      return {
        ok: false,
        code: "payment_invalid",
        reason:
          "the payment's accepted terms do not match this endpoint's x402-batch offer (see PAYMENT-REQUIRED)",
        final: true,
      };
    }
    let result: VerifyResponse;
    try {
      result = await this.protocol.verify(SDK_SCHEME, payment.payload, requirements);
    } catch (err) {
      if (!(err instanceof VerifyError)) return this.#unavailable("verify", err);
      result = { isValid: false, invalidReason: err.invalidReason, invalidMessage: err.invalidMessage };
    }
    if (!result.isValid) {
      const reason = describe(result.invalidReason, result.invalidMessage);
      // The channel store (Redis) did not answer: nothing is wrong with the payment; retry.
      if (result.invalidReason === STATE_UNAVAILABLE) return this.#unavailable("verify", new Error(reason));
      // The channel's state goes back with the refusal, so the official client resynchronises.
      const challenge = CORRECTIVE.has(result.invalidReason ?? "")
        ? await this.protocol.render(
            call,
            await this.offers(call),
            result.invalidReason ?? reason,
            payment.payload,
          )
        : undefined;
      return { ok: false, code: "payment_invalid", reason, ...(challenge ? { challenge } : {}) };
    }
    // The channel is now reserved for this request under the SDK's pending id: it travels to
    // Settle or Release (on any replica) as the scheme's hold.
    const pendingId = this.#server.readRequestContext(payment.payload)?.pendingId;
    if (!pendingId)
      return { ok: false, code: "service_unavailable", reason: "the channel reservation was not recorded" };
    // A deposit's payer balance: read by the in-process facilitator with the deposit's checks, or
    // here with a remote one.
    if (!parsed.draw) return { ok: true, hold: pendingId };
    const seen = result.extra?.payerBalance;
    const balance =
      typeof seen === "string"
        ? seen
        : (
            await this.#deps.chain?.balanceOf(this.#cfg.asset as Hex, payment.payer).catch(() => undefined)
          )?.toString();
    return balance === undefined ? { ok: true, hold: pendingId } : { ok: true, hold: pendingId, balance };
  }

  /**
   * A voucher whose cumulative amount was already used: the channel has moved on. The answer is the
   * scheme's corrective offer, carrying the channel's state, so the official client resynchronises.
   */
  async conflict(call: PricedCall, parsed: ParsedPayment<BatchPayment>) {
    const code = "invalid_batch_settlement_evm_cumulative_amount_mismatch";
    const challenge = await this.protocol.render(call, await this.offers(call), code, parsed.payload.payload);
    return { reason: describe(code), challenge };
  }

  /**
   * Vouchers on known channels, admitted, charged and released here with one Redis script each
   * and no core reservation. The channel's lock (the SDK's pendingRequest, in the record every
   * replica reads) holds one request at a time; a replayed voucher no longer continues what the
   * channel charged, so it is answered with the corrective 402 and never served twice. Only vouchers
   * whose signature and channel terms check out get here, so the answers given without the core's
   * attempt limits (served, busy, corrective 402, over the deposit) all need the payer's key;
   * anything else (a bad signature, other terms, a deposit, an unknown or stale channel) is left to
   * the core's path, attempt limits included, and the SDK.
   */
  readonly guarded: SelfGuarded<BatchPayment> = {
    admit: (call, parsed, token) => this.#admit(call, parsed.payload, token),
    commit: (call, parsed, token) => this.#commit(call, parsed.payload, token),
    release: (requestId, parsed, token) =>
      this.#deps.vouchers.release(parsed.payload.channelId.toLowerCase(), token, requestId),
    undo: async (call, parsed, token) => {
      const requirements = await this.#matching(call, parsed.payload);
      if (!requirements) return false;
      const { voucher: v } = parsed.payload.payload.payload as VoucherPayload;
      const cumulative = v.maxClaimableAmount;
      return this.#deps.vouchers.uncommit(v.channelId.toLowerCase(), token, {
        cumulative,
        charged: (BigInt(cumulative) - BigInt(requirements.amount)).toString(),
      });
    },
  };

  async #admit(call: PricedCall, payment: BatchPayment, token: string): Promise<Verdict | undefined> {
    if (payment.type !== "voucher") return undefined;
    const { channelConfig: config, voucher: v } = payment.payload.payload as VoucherPayload;
    const cumulative = v.maxClaimableAmount;
    // A smart-wallet payer (no payer authorizer) or an amount not written canonically: the SDK decides.
    if (sameAddress(config.payerAuthorizer, ZERO_ADDRESS) || BigInt(cumulative).toString() !== cumulative)
      return undefined;
    if (this.#refusal(call, payment)) return undefined;
    const requirements = await this.#matching(call, payment);
    const channelId = v.channelId.toLowerCase();
    if (!requirements || !this.#termsHold(config, channelId, requirements)) return undefined;
    if (voucherSigner(this.#chainId, v) !== config.payerAuthorizer.toLowerCase()) return undefined;
    const now = Date.now();
    const ttl = Math.max(PENDING_TTL_MS[0], (requirements.maxTimeoutSeconds ?? 0) * 1000);
    const admitted = await this.#deps.vouchers.admit({
      channelId,
      cumulative,
      charged: (BigInt(cumulative) - BigInt(requirements.amount)).toString(),
      pendingId: token,
      requestId: call.requestId,
      now,
      expiresAt: now + Math.min(PENDING_TTL_MS[1], ttl),
      freshMs: this.#server.getOnchainStateTtlMs(),
    });
    switch (admitted.kind) {
      case "unknown":
        return undefined;
      case "reserved":
        return { ok: true, hold: admitted.pendingId };
      case "busy":
        return { ok: false, code: "payment_invalid", reason: describe(BUSY) };
      case "exceeds_balance":
        return {
          ok: false,
          code: "payment_invalid",
          reason: describe("invalid_batch_settlement_evm_cumulative_exceeds_balance"),
        };
      default: {
        const code =
          admitted.kind === "mismatch" ? MISMATCH : "invalid_batch_settlement_evm_cumulative_below_claimed";
        // The SDK's corrective offer reads the channel from here instead of from Redis again.
        this.#server.rememberChannelSnapshot(payment.payload, JSON.parse(admitted.record));
        const challenge = await this.protocol.render(call, await this.offers(call), code, payment.payload);
        return { ok: false, code: "payment_invalid", reason: describe(code), challenge };
      }
    }
  }

  /** The SDK's validateChannelConfig: the voucher's channel is one of this API's terms. */
  #termsHold(
    config: z.infer<typeof channelConfig>,
    channelId: string,
    requirements: PaymentRequirements,
  ): boolean {
    const extra = requirements.extra as { receiverAuthorizer?: unknown; withdrawDelay?: unknown };
    return (
      this.#channelIds.of(config, this.#chainId) === channelId &&
      sameAddress(config.receiver, requirements.payTo) &&
      typeof extra.receiverAuthorizer === "string" &&
      sameAddress(config.receiverAuthorizer, extra.receiverAuthorizer) &&
      sameAddress(config.token, requirements.asset) &&
      (extra.withdrawDelay === undefined || config.withdrawDelay === Number(extra.withdrawDelay)) &&
      config.withdrawDelay >= WITHDRAW_DELAY_RANGE[0] &&
      config.withdrawDelay <= WITHDRAW_DELAY_RANGE[1]
    );
  }

  /** Charges the call a voucher admitted (the SDK's handleBeforeSettle, one script). */
  async #commit(call: PricedCall, payment: BatchPayment, token: string): Promise<SettleResult> {
    const requirements = await this.#matching(call, payment);
    if (!requirements) {
      return NOT_VERIFIED;
    }
    const { voucher: v } = payment.payload.payload as VoucherPayload;
    const cumulative = v.maxClaimableAmount;
    const charged = (BigInt(cumulative) - BigInt(requirements.amount)).toString();
    const done = await this.#deps.vouchers.commit(
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
          this.protocol.receipt({
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
      receipt: [this.protocol.receipt(voucherReceipt(done.record, payment, requirements))],
    };
  }

  /** Gives the SDK back, on a payload decoded anew, the reservation Verify made (on any replica). */
  async #handOver(payment: BatchPayment, hold: string): Promise<void> {
    const snapshot = await this.#deps.storage.get(payment.channelId);
    this.#server.mergeRequestContext(payment.payload, {
      channelId: payment.channelId,
      pendingId: hold,
      reservationCommitted: true,
      // Without a snapshot the SDK's cancel path would delete the channel record.
      ...(snapshot ? { channelSnapshot: snapshot } : {}),
    });
  }

  async settle(
    call: PricedCall,
    parsed: ParsedPayment<BatchPayment>,
    { hold, takenOver }: VerifiedPayment,
  ): Promise<SettleResult> {
    const payment = parsed.payload;
    const requirements = await this.#matching(call, payment);
    if (!requirements || !hold) {
      return NOT_VERIFIED;
    }
    if (takenOver && payment.type === "deposit") {
      const landed = await this.#depositedByDeadOwner(payment, requirements, hold);
      if (landed) return landed;
    }
    await this.#handOver(payment, hold);
    let result: SettleResponse;
    try {
      result = await this.protocol.settle(SDK_SCHEME, payment.payload, requirements);
    } catch (err) {
      if (!(err instanceof SettleError))
        return { ...this.#unavailable("settle", err), transaction: "", receipt: [] };
      result = {
        success: false,
        errorReason: err.errorReason,
        errorMessage: err.errorMessage,
        transaction: err.transaction,
        network: err.network,
      };
    }
    if (!result.success) {
      const reason = `settlement failed: ${describe(result.errorReason, result.errorMessage)}`;
      this.#deps.logger.info(
        { errorReason: result.errorReason, detail: result.errorMessage },
        "x402-batch settlement failed",
      );
      return {
        ok: false,
        code: "payment_invalid",
        reason,
        transaction: result.transaction ?? "",
        receipt: [this.protocol.receipt({ ...result, errorMessage: reason })],
      };
    }
    const extra = (result.extra ?? {}) as {
      chargedAmount?: string;
      channelState?: { chargedCumulativeAmount?: string };
    };
    const charged = extra.chargedAmount ?? requirements.amount;
    return {
      ok: true,
      collection: {
        kind: "accrual",
        channel: payment.channelId,
        amount: charged,
        cumulative: extra.channelState?.chargedCumulativeAmount ?? payment.cumulative,
        // A deposit opened (or topped up) the channel on chain on this call.
        ...(result.transaction ? { transaction: result.transaction } : {}),
      },
      receipt: [this.protocol.receipt(result)],
    };
  }

  /**
   * A deposit taken over from a replica that died running it: the SDK there may have sent the
   * deposit, and the SDK here would send it again (it reverts: the authorization is used). Its
   * ERC-3009 authorization's use is looked for on chain, waited for (up to 15 s) while the dead
   * owner's transaction may still be in the mempool; found, the channel is recorded as the SDK
   * records a deposit that landed (this voucher charged, the lock let go) and the call is settled
   * by that transaction; already recorded with this voucher charged (the owner died after that),
   * answered from the record. Not found (never sent, a Permit2 deposit, no chain reader): undefined,
   * the deposit runs here.
   */
  async #depositedByDeadOwner(
    payment: BatchPayment,
    requirements: PaymentRequirements,
    hold: string,
  ): Promise<SettleResult | undefined> {
    const chain = this.#deps.chain;
    const raw = payment.payload.payload as VoucherPayload & {
      deposit: { amount: string; authorization: { erc3009Authorization?: { salt: Hex } } };
    };
    const salt = raw.deposit.authorization.erc3009Authorization?.salt;
    if (!chain || !salt) return undefined;
    // The SDK's buildErc3009DepositNonce: the deposit's ERC-3009 nonce binds channel and salt.
    const nonce = keccak256(
      encodeAbiParameters([{ type: "bytes32" }, { type: "uint256" }], [payment.channelId, BigInt(salt)]),
    );
    const until = Date.now() + TAKEOVER_WAIT_MS;
    let used: { transaction: Hex; canceled?: true } | undefined;
    for (;;) {
      used = await chain
        .authorizationUse(requirements.asset as Hex, payment.payer, nonce)
        .catch(() => undefined);
      if (used || Date.now() >= until) break;
      await new Promise((r) => setTimeout(r, TAKEOVER_POLL_MS));
    }
    // Canceled by the payer: no deposit landed (the SDK's own run here is refused, as it should be).
    if (!used || used.canceled) return undefined;
    const now = Date.now();
    // As the SDK's handleAfterSettle for a deposit: the voucher charged, the lock let go.
    const updated = await this.#deps.storage.updateChannel(payment.channelId, (current) => {
      if (!current || current.pendingRequest?.pendingId !== hold) return current;
      return {
        channelId: current.channelId,
        channelConfig: current.channelConfig, // set from this payload at Verify
        chargedCumulativeAmount: (
          BigInt(current.chargedCumulativeAmount) + BigInt(requirements.amount)
        ).toString(),
        signedMaxClaimable: raw.voucher.maxClaimableAmount,
        signature: raw.voucher.signature as Hex,
        balance: (BigInt(current.balance) + BigInt(raw.deposit.amount)).toString(),
        totalClaimed: current.totalClaimed,
        withdrawRequestedAt: current.withdrawRequestedAt,
        refundNonce: current.refundNonce,
        onchainSyncedAt: now,
        lastRequestTimestamp: now,
      };
    });
    const channel = updated.channel;
    if (!channel) return undefined;
    // The lock no longer this call's, the record's last charged voucher this one: the dead owner
    // (or a takeover that died in its turn) recorded this deposit and charged this call; answered
    // again from the record, not charged twice (the SDK would send the used deposit again).
    const recorded =
      updated.status === "updated" || channel.signature.toLowerCase() === raw.voucher.signature.toLowerCase();
    // Else the channel moved on without it: the facilitator's answer decides.
    if (!recorded) return undefined;
    this.#deps.logger.info(
      { transaction: used.transaction },
      "x402-batch deposit sent by a dead replica landed",
    );
    const result: SettleResponse = {
      success: true,
      payer: payment.payer,
      transaction: used.transaction,
      network: requirements.network,
      amount: raw.deposit.amount,
      extra: {
        channelState: {
          channelId: channel.channelId,
          balance: channel.balance,
          totalClaimed: channel.totalClaimed,
          withdrawRequestedAt: channel.withdrawRequestedAt,
          refundNonce: String(channel.refundNonce),
          chargedCumulativeAmount: channel.chargedCumulativeAmount,
        },
        chargedAmount: requirements.amount,
      },
    };
    return {
      ok: true,
      collection: {
        kind: "accrual",
        channel: payment.channelId,
        amount: requirements.amount,
        cumulative: channel.chargedCumulativeAmount,
        transaction: used.transaction,
      },
      receipt: [this.protocol.receipt(result)],
    };
  }

  async release(call: PricedCall, parsed: ParsedPayment<BatchPayment>, hold: string): Promise<void> {
    const payment = parsed.payload;
    const requirements = await this.#matching(call, payment);
    if (!requirements || !hold) return;
    await this.#handOver(payment, hold);
    const server = await this.protocol.ready(SDK_SCHEME, this.#cfg.network);
    await server
      .createPaymentCancellationDispatcher(payment.payload, requirements)
      .cancel({ reason: "handler_failed", responseStatus: 502 });
  }

  receiptFor(): Header[] {
    return []; // a channel payment never arrives already collected
  }

  retentionMs(): number {
    return USED_VOUCHER_MS;
  }

  meta(call: PricedCall): PaymentMeta {
    return { costUsdc: call.endpoint.price, paymentChain: this.#cfg.network, paymentToken: this.#cfg.asset };
  }

  async #matching(call: PricedCall, payment: BatchPayment): Promise<PaymentRequirements | undefined> {
    const requirements = await this.#requirementsFor(call.endpoint.price);
    const server = await this.protocol.ready(SDK_SCHEME, this.#cfg.network);
    return server.findMatchingRequirements([requirements], payment.payload);
  }

  #unavailable(operation: string, err: unknown): { ok: false; code: "service_unavailable"; reason: string } {
    const message = err instanceof Error ? err.message : String(err);
    this.#deps.logger.warn(
      { err: message, operation },
      "x402-batch facilitator or channel store unavailable",
    );
    const detail = err instanceof FacilitatorUnavailableError ? err.message : `${operation} failed`;
    return {
      ok: false,
      code: "service_unavailable",
      reason: `x402-batch payments are unavailable: ${detail}`,
    };
  }

  methods(): PaymentMethodInfo[] {
    const { network, asset, assetSymbol, assetDecimals, payTo } = this.#cfg;
    return [
      {
        protocol: "x402",
        scheme: SPEC_SCHEME,
        network,
        asset,
        symbol: assetSymbol,
        decimals: assetDecimals,
        payTo,
        method: "",
      },
    ];
  }

  async close(): Promise<void> {}
}
