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
// deposit) takes a shorter road that needs no chain call and no core reservation (see `guarded`,
// x402-batch-known-channels.ts): the same checks as the SDK's, one Redis script at Verify, one at
// Settle. Anything else (a deposit, an unknown or stale channel, a smart-wallet payer) goes through
// the SDK as before. The payload and its terms are read in x402-batch-credential.ts. The payer's
// cooperative refund request is answered here and sent by the settlement worker
// (x402-batch-refunds.ts).
import { randomUUID } from "node:crypto";
import { priceAtomic } from "@tollgate/catalog";
import type { X402BatchConfig } from "@tollgate/payment-rails";
import type { Logger } from "@tollgate/platform";
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from "@x402/core/types";
import { SettleError, VerifyError } from "@x402/core/types";
import { BatchSettlementEvmScheme, type ChannelStorage } from "@x402/evm/batch-settlement/server";
import type { Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import type { SettlementChain } from "../adapters/settlement-chain.ts";
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
import type { BatchRefundStore } from "../stores/batch-refunds.ts";
import type { BatchVoucherStore } from "../stores/batch-vouchers.ts";
import {
  type BatchPayment,
  claimBatch,
  correctiveCode,
  describe,
  NOT_VERIFIED,
  SDK_SCHEME,
  SPEC_SCHEME,
  termsRefusal,
} from "./x402-batch-credential.ts";
import { depositedByDeadOwner } from "./x402-batch-deposit-takeover.ts";
import { knownChannelVouchers } from "./x402-batch-known-channels.ts";
import { type BatchRefunds, batchRefunds } from "./x402-batch-refunds.ts";

/** How long a voucher's key stays reserved as used: the channel state refuses it after that anyway. */
const USED_VOUCHER_MS = 60 * 60_000;

/** The SDK's refusal when it cannot read the channel's state (its store is unreachable). */
const STATE_UNAVAILABLE = "invalid_batch_settlement_evm_verification_state_unavailable";

export interface X402BatchDeps {
  protocol: X402Protocol;
  storage: ChannelStorage;
  /** The same channel records, one script per step, for vouchers on known channels. */
  vouchers: BatchVoucherStore;
  /** Refund requests on the same records, for the settlement worker to send. */
  refunds: BatchRefundStore;
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
  /** Vouchers on known channels: admitted, charged and released without a core reservation. */
  readonly guarded: SelfGuarded<BatchPayment>;
  readonly #refunds: BatchRefunds;

  constructor(cfg: X402Config, terms: X402BatchConfig, deps: X402BatchDeps) {
    this.#cfg = cfg;
    this.#terms = terms;
    this.#deps = deps;
    this.protocol = deps.protocol;
    this.#server = new BatchSettlementEvmScheme(cfg.payTo, {
      storage: deps.storage,
      receiverAuthorizerSigner: deps.authorizer,
      withdrawDelay: terms.withdrawDelaySeconds,
    });
    deps.protocol.register({ network: cfg.network, server: this.#server });
    this.guarded = knownChannelVouchers({
      cfg,
      server: this.#server,
      vouchers: deps.vouchers,
      protocol: deps.protocol,
      matching: (call, payment) => this.#matching(call, payment),
      offers: (call) => this.offers(call),
    });
    this.#refunds = batchRefunds({
      cfg,
      server: this.#server,
      refunds: deps.refunds,
      policy: cfg.batchRefunds,
      protocol: deps.protocol,
      logger: deps.logger,
      matching: (call, payment) => this.#matching(call, payment),
      offers: (call) => this.offers(call),
      newId: () => `refund-${randomUUID()}`,
    });
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
    return claimBatch(payload);
  }

  async verify(call: PricedCall, parsed: ParsedPayment<BatchPayment>): Promise<Verdict> {
    const payment = parsed.payload;
    const refusal = termsRefusal(this.#cfg, call, payment);
    if (refusal) return { ok: false, code: "payment_invalid", reason: refusal, final: true };
    if (payment.type === "refund") return this.#refunds.verify(call, payment);
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
      const corrective = correctiveCode(result.invalidReason);
      const challenge = corrective
        ? await this.protocol.render(call, await this.offers(call), corrective, payment.payload)
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
    // A refund request used already: the core's own answer (no channel state to resynchronise).
    if (parsed.payload.type === "refund") return undefined;
    const code = "invalid_batch_settlement_evm_cumulative_amount_mismatch";
    const challenge = await this.protocol.render(call, await this.offers(call), code, parsed.payload.payload);
    return { reason: describe(code), challenge };
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
    { hold, takenOver, deadline }: VerifiedPayment,
  ): Promise<SettleResult> {
    const payment = parsed.payload;
    const requirements = await this.#matching(call, payment);
    if (!requirements || !hold) {
      return NOT_VERIFIED;
    }
    if (payment.type === "refund")
      return this.#refunds.settle(payment, hold, deadline ?? Number.POSITIVE_INFINITY);
    if (takenOver && payment.type === "deposit") {
      const landed = await depositedByDeadOwner(this.#deps, payment, requirements, hold);
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

  async release(call: PricedCall, parsed: ParsedPayment<BatchPayment>, hold: string): Promise<void> {
    const payment = parsed.payload;
    const requirements = await this.#matching(call, payment);
    if (!requirements || !hold) return;
    if (payment.type === "refund") return this.#refunds.release(payment, hold);
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
