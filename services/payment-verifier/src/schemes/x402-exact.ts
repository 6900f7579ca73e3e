// x402 v2, scheme `exact` on EVM (EIP-3009 transferWithAuthorization), through the official
// ExactEvmScheme registered on the x402 protocol's shared resource server. What this module adds:
// refusals that say exactly why, our own checks before the facilitator is asked (the payment's
// identity, its terms and its signature: x402-exact-credential.ts), payments whose settlement
// landed after its answer was lost, a penalty for payers who undo a verified payment, and, with
// the in-process facilitator, one signature recovery per paid call instead of three (the second is
// the recovery memo's, see adapters/signature-memo.ts; X402ExactDeps).
import { priceAtomic } from "@tollgate/catalog";
import type { Facilitator } from "@tollgate/payment-rails";
import type { Logger } from "@tollgate/platform";
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from "@x402/core/types";
import { SettleError, VerifyError } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import type { Hex } from "viem";
import type { SettlementChain } from "../adapters/settlement-chain.ts";
import type { X402Config } from "../config.ts";
import { payerPenalty } from "../core/payments.ts";
import {
  type Authenticated,
  type Claim,
  FacilitatorUnavailableError,
  type Header,
  type ParsedPayment,
  type PaymentMeta,
  type PaymentMethodInfo,
  type PaymentScheme,
  type PricedCall,
  type SettleResult,
  type Verdict,
  type VerifiedPayment,
} from "../core/types.ts";
import type { X402Protocol } from "../protocols/x402.ts";
import type { ReservationStore } from "../stores/reservations.ts";
import {
  claimExact,
  type ExactPayment,
  SETTLED_MAX_MS,
  sameAddress,
  signatureCheck,
  termsRefusal,
} from "./x402-exact-credential.ts";

/** A settled payment is remembered until it could no longer be collected, plus this margin. */
const SETTLED_MARGIN_MS = 10 * 60_000;

/** Plain-language reasons for the facilitator's refusal codes. */
const REASONS: Record<string, string> = {
  invalid_exact_evm_signature: "the signature does not match the authorization",
  invalid_exact_evm_payload_authorization_valid_before: "the payment authorization has expired",
  invalid_exact_evm_payload_authorization_valid_after: "the payment authorization is not valid yet",
  invalid_exact_evm_payload_authorization_value_mismatch: "the signed amount does not equal the price",
  invalid_exact_evm_recipient_mismatch: "the signed recipient is not this API's payTo address",
  invalid_exact_evm_nonce_already_used: "this payment authorization was already used on chain",
  invalid_exact_evm_insufficient_balance: "the payer's token balance is too low",
  invalid_exact_evm_transaction_simulation_failed: "the transfer would fail on chain",
  invalid_exact_evm_transaction_failed: "the settlement transaction failed on chain",
  invalid_exact_evm_token_name_mismatch: "the EIP-712 domain name does not match the token",
  invalid_exact_evm_token_version_mismatch: "the EIP-712 domain version does not match the token",
  invalid_exact_evm_network_mismatch: "the payment is for another network",
  settlement_pending: "the settlement transaction was sent but not confirmed in time",
};

/** Refusals that cannot change for the same payload: remembered briefly by the core. */
const FINAL = new Set([
  "invalid_exact_evm_signature",
  "invalid_exact_evm_recipient_mismatch",
  "invalid_exact_evm_payload_authorization_value_mismatch",
  "invalid_exact_evm_token_name_mismatch",
  "invalid_exact_evm_token_version_mismatch",
  "invalid_exact_evm_network_mismatch",
]);

const NONCE_USED = "invalid_exact_evm_nonce_already_used";
/** An authorization its payer canceled on chain (cancelAuthorization): it can never be collected. */
const CANCELED = "the payer canceled this payment authorization on chain (AuthorizationCanceled)";
/**
 * The token's refusal of a transfer that only the payer can have caused after Verify: the balance
 * spent. Not "authorization used": our own earlier send of it (a replica killed mid-settlement, a
 * transfer still in the mempool) reads the same until its log is found.
 */
const SPENT_MEANWHILE = "invalid_exact_evm_insufficient_balance";
/**
 * How long a payer who undid a verified payment before its settlement (spent the balance, canceled
 * the authorization) is refused at Verify. The settlement is simulated once more just before it is
 * sent (beside the signer lock's round trip), so such a payment is not sent at all; only one undone
 * in the moment between that check and the send reverts with our gas. Either way the attempt costs
 * the payer an on-chain transaction of its own, and this makes it one per payer address this long.
 */
export const PAYER_PENALTY_MS = 10 * 60_000;
/** Lookups (1 s apart) for the transfer of an authorization a settlement found used. */
const SETTLED_LOOKUPS = 10;

function describe(code: string | undefined, message?: string): string {
  if (!code) return message || "the facilitator refused the payment";
  const text = REASONS[code];
  return text ? `${text} (${code})` : message ? `${code}: ${message}` : code;
}

export interface X402ExactDeps {
  protocol: X402Protocol;
  /** Reads the settlement chain; without it smart-wallet payers and lost settlements go to the facilitator alone. */
  chain: SettlementChain | undefined;
  /**
   * The in-process facilitator, when it is the only one: Settle of the credentials Verify accepted
   * goes to it directly, without verifying again, with the gas and fees it read while Verify ran.
   */
  local?: Pick<Facilitator, "settleVerified">;
  /** Where a payer whose settlement reverted is penalized (see PAYER_PENALTY_MS). */
  penalties: Pick<ReservationStore, "penalize">;
  logger: Logger;
  onInitFailure: () => void;
}

export class X402ExactScheme implements PaymentScheme<PaymentPayload, PaymentRequirements, ExactPayment> {
  readonly name = "exact";
  readonly protocol: X402Protocol;
  readonly #cfg: X402Config;
  readonly #deps: X402ExactDeps;
  /** Requirements per price: they depend only on it and the configuration. */
  readonly #requirements = new Map<string, PaymentRequirements[]>();
  /** Does the signature belong to the payer (see signatureCheck)? */
  readonly #signatureRefusal: (payment: ExactPayment) => Promise<string | { recovered: boolean }>;

  constructor(cfg: X402Config, deps: X402ExactDeps) {
    this.#cfg = cfg;
    this.#deps = deps;
    this.#signatureRefusal = signatureCheck(cfg, deps.chain);
    this.protocol = deps.protocol;
    deps.protocol.register({ network: cfg.network, server: new ExactEvmScheme() });
  }

  /**
   * Learns the facilitator's supported kinds. Unreachable facilitator: FacilitatorUnavailableError
   * (retried on later calls). A reachable facilitator without our network: a configuration error.
   */
  async init(): Promise<void> {
    try {
      await this.protocol.ready(this.name, this.#cfg.network);
    } catch (err) {
      if (this.protocol.unsupported(this.name, this.#cfg.network)) {
        throw new Error(`the x402 facilitator does not support scheme exact on ${this.#cfg.network}`);
      }
      this.#deps.onInitFailure();
      throw err;
    }
  }

  async #requirementsFor(price: string): Promise<PaymentRequirements[]> {
    const cached = this.#requirements.get(price);
    if (cached) return cached;
    const server = await this.protocol.ready(this.name, this.#cfg.network);
    const { network, asset, assetName, assetVersion, assetDecimals, payTo, maxTimeoutSeconds } = this.#cfg;
    const built = await server.buildPaymentRequirements({
      scheme: this.name,
      network,
      payTo,
      // An explicit asset amount: the token is configuration, not the library's default per network.
      price: {
        amount: priceAtomic(price, assetDecimals).toString(),
        asset,
        extra: { name: assetName, version: assetVersion },
      },
      maxTimeoutSeconds,
    });
    this.#requirements.set(price, built);
    return built;
  }

  offers(call: PricedCall): Promise<PaymentRequirements[]> {
    return this.#requirementsFor(call.endpoint.price);
  }

  claim(payload: PaymentPayload): Claim<ExactPayment> {
    if (payload.accepted.scheme !== this.name) return { kind: "not-mine" };
    return claimExact(payload);
  }

  /**
   * Before anything is reserved or counted against the payer: the terms, then the signature, so
   * only the payer's own payments are counted against its limit, and the in-process facilitator's
   * chain reads and the settlement's fees start only for a signature that is the payer's (its own
   * recovery of it is then the memo's: one recovery).
   */
  async authenticate(call: PricedCall, parsed: ParsedPayment<ExactPayment>): Promise<Authenticated> {
    const payment = parsed.payload;
    const refusal = termsRefusal(this.#cfg, call, payment);
    if (refusal) return { ok: false, code: "payment_invalid", reason: refusal };
    const signature = await this.#signatureRefusal(payment);
    if (typeof signature === "string")
      return { ok: false, code: "payment_invalid", reason: signature, final: true };
    return { ok: true, proven: signature.recovered };
  }

  /** After `authenticate`: the facilitator's verification, and the payer's balance with it. */
  async verify(call: PricedCall, parsed: ParsedPayment<ExactPayment>): Promise<Verdict> {
    const payment = parsed.payload;
    const requirements = await this.#matching(call, payment);
    if (!requirements) {
      return {
        ok: false,
        code: "payment_invalid",
        reason: "the payment's accepted terms do not match this endpoint's offer (see PAYMENT-REQUIRED)",
        final: true,
      };
    }
    // The in-process facilitator reads the balance with its simulation of a plain ECDSA
    // authorization; anything else (a remote facilitator, a smart wallet) reads it here, beside it.
    const rides = this.#deps.local !== undefined && payment.signature.length === 132;
    const chain = this.#deps.chain;
    const read =
      rides || !chain
        ? undefined
        : chain.balanceOf(this.#cfg.asset as Hex, payment.authorization.from as Hex).catch(() => undefined);
    let result: VerifyResponse;
    try {
      result = await this.protocol.verify(this.name, payment.payload, requirements);
    } catch (err) {
      if (err instanceof VerifyError) {
        result = { isValid: false, invalidReason: err.invalidReason, invalidMessage: err.invalidMessage };
      } else {
        return this.#unavailable("verify", err);
      }
    }
    if (!result.isValid) {
      if (result.invalidReason === NONCE_USED) return this.#alreadyCollected(payment);
      return {
        ok: false,
        code: "payment_invalid",
        reason: describe(result.invalidReason, result.invalidMessage),
        final: FINAL.has(result.invalidReason ?? ""),
      };
    }
    if (result.payer && !sameAddress(result.payer, payment.authorization.from)) {
      return {
        ok: false,
        code: "payment_invalid",
        reason: "the facilitator verified a different payer",
        final: true,
      };
    }
    const seen = result.extra?.payerBalance;
    const balance = typeof seen === "string" ? seen : (await read)?.toString();
    return balance === undefined ? { ok: true } : { ok: true, balance };
  }

  /**
   * The authorization was used on chain. It pays exactly this price to our payTo and is still within
   * its validity (checked above), and the core found no settled record of it: an earlier settlement
   * of it landed after its answer was lost. The money is ours, so the call it paid for is served now
   * (once: the core records it as settled). A canceled authorization leaves no AuthorizationUsed
   * log, so it is refused.
   */
  async #alreadyCollected(payment: ExactPayment): Promise<Verdict> {
    const used = describe(NONCE_USED);
    const chain = this.#deps.chain;
    if (!chain) return { ok: false, code: "payment_invalid", reason: used };
    let found: { transaction: string; canceled?: true } | undefined;
    try {
      found = await chain.authorizationUse(
        this.#cfg.asset,
        payment.authorization.from as Hex,
        payment.authorization.nonce as Hex,
      );
    } catch {
      throw new FacilitatorUnavailableError(
        "the settlement chain is unreachable (looking up a used payment)",
      );
    }
    if (found?.canceled) return { ok: false, code: "payment_invalid", reason: CANCELED, final: true };
    if (!found) return { ok: false, code: "payment_invalid", reason: used };
    this.#deps.logger.info(
      { transaction: found.transaction },
      "serving a payment whose settlement landed earlier",
    );
    return { ok: true, collected: found };
  }

  /** Refuses the payer's payments for a while (see PAYER_PENALTY_MS): it undid one after Verify. */
  async #penalize(payer: string, why: string, transaction = ""): Promise<void> {
    this.#deps.logger.warn(
      { payer, transaction, why },
      "a verified payment was undone by its payer before its settlement: the payer is refused for a while",
    );
    await this.#deps.penalties
      .penalize(payerPenalty(this.name, payer), PAYER_PENALTY_MS)
      .catch((err: unknown) => this.#deps.logger.warn({ err, payer }, "could not penalize a payer"));
  }

  async settle(
    call: PricedCall,
    parsed: ParsedPayment<ExactPayment>,
    verified: VerifiedPayment,
  ): Promise<SettleResult> {
    const payment = parsed.payload;
    const requirements = await this.#matching(call, payment);
    if (!requirements) {
      return {
        ok: false,
        code: "payment_invalid",
        reason: "the payment's accepted terms do not match this endpoint's offer",
        transaction: "",
        receipt: [],
      };
    }
    let result: SettleResponse;
    try {
      const direct = verified.sameCredentials ? this.#deps.local?.settleVerified : undefined;
      result = direct
        ? await direct(payment.payload, requirements)
        : await this.protocol.settle(this.name, payment.payload, requirements);
    } catch (err) {
      if (!(err instanceof SettleError))
        return { ...this.#unavailable("settle", err), transaction: "", receipt: [] };
      result = {
        success: false,
        errorReason: err.errorReason,
        errorMessage: err.errorMessage,
        payer: err.payer,
        transaction: err.transaction,
        network: err.network,
      };
    }
    if (!result.success && result.errorReason === NONCE_USED) {
      // The authorization is used (or canceled) on chain, and this call's settlement is under way
      // (core: it holds the reservation). Used by an earlier attempt of this Settle, on a replica
      // that died before answering: the money is ours once, and the call is served with that
      // transfer as its receipt. That transfer may still be in the mempool (the nonce reads as
      // used, no log yet): give it the time a few blocks take. Canceled by the payer since Verify:
      // refused, and the payer with it, as for a spent balance.
      let landed: Verdict | undefined;
      for (let i = 0; i < SETTLED_LOOKUPS && !(landed?.ok && landed.collected); i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 1_000));
        landed = await this.#alreadyCollected(payment).catch(() => undefined);
        if (landed && !landed.ok && landed.reason === CANCELED) break;
      }
      if (landed?.ok && landed.collected) {
        const transaction = landed.collected.transaction;
        return {
          ok: true,
          collection: { kind: "transaction", transaction },
          receipt: this.receiptFor(call, parsed, transaction),
        };
      }
      if (landed && !landed.ok && landed.reason === CANCELED) {
        await this.#penalize(payment.authorization.from, "canceled", result.transaction);
        result = { ...result, errorReason: "authorization_canceled", errorMessage: CANCELED };
      }
    }
    if (!result.success && result.errorReason === SPENT_MEANWHILE) {
      // The payer spent what Verify saw: the transfer was not sent (the check just before sending
      // found it), or it was mined and reverted (the balance went in the moment between).
      await this.#penalize(payment.authorization.from, "balance spent", result.transaction);
    }
    if (!result.success) {
      const reason = `settlement failed: ${describe(result.errorReason, result.errorMessage)}`;
      // The facilitator's raw message (node error text with the contract call, sender and library
      // version) is not for clients: the receipt carries the code and the same reason as the body.
      this.#deps.logger.info(
        { errorReason: result.errorReason, detail: result.errorMessage },
        "settlement failed",
      );
      const pending = result.errorReason === "settlement_pending";
      return {
        ok: false,
        // A broadcast transfer that was not confirmed in time may still land: a retry with the same
        // payment is served once it did (see #alreadyCollected), so this is "retry", not "refused".
        code: pending ? "service_unavailable" : "payment_invalid",
        reason: pending ? `${reason}; retry the same request with the same payment in a few seconds` : reason,
        transaction: result.transaction ?? "",
        receipt: [this.protocol.receipt({ ...result, errorMessage: reason })],
      };
    }
    return {
      ok: true,
      collection: { kind: "transaction", transaction: result.transaction },
      receipt: [this.protocol.receipt(result)],
    };
  }

  receiptFor(_call: PricedCall, parsed: ParsedPayment<ExactPayment>, transaction: string): Header[] {
    return [
      this.protocol.receipt({
        success: true,
        transaction,
        network: this.#cfg.network,
        payer: parsed.payload.authorization.from,
      }),
    ];
  }

  retentionMs(parsed: ParsedPayment<ExactPayment>): number {
    const untilExpiry = Math.max(0, Number(parsed.payload.authorization.validBefore) * 1000 - Date.now());
    return Math.min(untilExpiry + SETTLED_MARGIN_MS, SETTLED_MAX_MS);
  }

  meta(call: PricedCall): PaymentMeta {
    return { costUsdc: call.endpoint.price, paymentChain: this.#cfg.network, paymentToken: this.#cfg.asset };
  }

  async #matching(call: PricedCall, payment: ExactPayment): Promise<PaymentRequirements | undefined> {
    const requirements = await this.#requirementsFor(call.endpoint.price);
    const server = await this.protocol.ready(this.name, this.#cfg.network);
    return server.findMatchingRequirements(requirements, payment.payload);
  }

  #unavailable(operation: string, err: unknown): { ok: false; code: "service_unavailable"; reason: string } {
    const message = err instanceof Error ? err.message : String(err);
    this.#deps.logger.warn({ err: message, operation }, "x402 facilitator unavailable");
    // Our own outage messages are safe to show; anything else may carry internals.
    const detail = err instanceof FacilitatorUnavailableError ? err.message : `${operation} failed`;
    return {
      ok: false,
      code: "service_unavailable",
      reason: `the payment facilitator is unavailable: ${detail}`,
    };
  }

  methods(): PaymentMethodInfo[] {
    const { network, asset, assetSymbol, assetDecimals, payTo } = this.#cfg;
    return [
      {
        protocol: "x402",
        scheme: this.name,
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
