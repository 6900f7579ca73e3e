// x402 v2, scheme `exact` on EVM (EIP-3009 transferWithAuthorization), through the official
// x402ResourceServer: it builds the requirements, matches payloads to them and drives the
// facilitator's verify and settle. What this module adds: decoding credentials without ever
// throwing, the payment's identity for replay protection, and refusals that say exactly why.
import { createHash } from "node:crypto";
import { priceAtomic } from "@tollgate/catalog";
import { type Logger, prom, type Registry } from "@tollgate/platform";
import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import { PaymentPayloadV2Schema } from "@x402/core/schemas";
import { type FacilitatorClient, x402ResourceServer } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from "@x402/core/types";
import { SettleError, VerifyError } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { z } from "zod";
import { chainIdOf, type X402ExactConfig } from "../config.ts";
import { FacilitatorUnavailableError } from "../facilitator.ts";
import {
  findHeader,
  type Header,
  type ParsedPayment,
  type ParseResult,
  type PaymentMethodInfo,
  type PaymentScheme,
  type PricedCall,
  type SettleResult,
  type VerifyResult,
} from "./scheme.ts";

export const PAYMENT_REQUIRED_HEADER = "PAYMENT-REQUIRED";
export const PAYMENT_SIGNATURE_HEADER = "PAYMENT-SIGNATURE";
export const PAYMENT_RESPONSE_HEADER = "PAYMENT-RESPONSE";
/** The x402 v1 header name, accepted for clients that still send it (the payload must be v2). */
export const LEGACY_PAYMENT_HEADER = "X-PAYMENT";

/** Far above any real payload (~1 KB); refuse before decoding anything larger. */
const MAX_HEADER_CHARS = 16_384;
/** The exact scheme's facilitator refuses authorizations expiring within this many seconds. */
const EXPIRY_MARGIN_SECONDS = 6;
/** How often a failed facilitator initialisation is retried, at most. */
const INIT_RETRY_MS = 1_000;

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "expected a 20-byte hex address");
const uint256 = z.string().regex(/^[0-9]{1,78}$/, "expected a decimal integer string");
// Strict: a payload that also carries another transfer method (e.g. permit2Authorization) would be
// routed to it by the facilitator while we keyed replay protection on the EIP-3009 nonce.
const eip3009Payload = z.strictObject({
  signature: z.string().regex(/^0x[0-9a-fA-F]{2,4096}$/, "expected a hex signature"),
  authorization: z.strictObject({
    from: address,
    to: address,
    value: uint256,
    validAfter: uint256,
    validBefore: uint256,
    nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/, "expected a 32-byte hex nonce"),
  }),
});

export type Eip3009Authorization = z.infer<typeof eip3009Payload>["authorization"];

export interface ExactPayment {
  payload: PaymentPayload;
  authorization: Eip3009Authorization;
}

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

function describe(code: string | undefined, message?: string): string {
  if (!code) return message || "the facilitator refused the payment";
  const text = REASONS[code];
  return text ? `${text} (${code})` : message ? `${code}: ${message}` : code;
}

function iso(unixSeconds: bigint): string {
  const ms = Number(unixSeconds) * 1000;
  return Number.isFinite(ms) && ms < 8.64e15 ? new Date(ms).toISOString() : `${unixSeconds}`;
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

export class X402ExactScheme implements PaymentScheme<ExactPayment> {
  readonly name = "exact";
  readonly #cfg: X402ExactConfig;
  readonly #server: x402ResourceServer;
  readonly #logger: Logger;
  /** Requirements per price: they depend only on it and the configuration. */
  readonly #requirements = new Map<string, PaymentRequirements[]>();
  readonly #initFailures: prom.Counter;
  #ready = false;
  #initializing: Promise<void> | undefined;
  #lastInitAttempt = 0;

  constructor(cfg: X402ExactConfig, facilitator: FacilitatorClient, logger: Logger, registry: Registry) {
    this.#cfg = cfg;
    this.#logger = logger;
    this.#server = new x402ResourceServer(facilitator).register(cfg.network, new ExactEvmScheme());
    this.#initFailures = new prom.Counter({
      name: "payment_facilitator_init_failures_total",
      help: "Failed attempts to learn what the x402 facilitator supports",
      registers: [registry],
    });
  }

  /**
   * Learns the facilitator's supported kinds. Unreachable facilitator: rejects with
   * FacilitatorUnavailableError (retried on later calls). Facilitator without our network: a
   * configuration error, rejected as such.
   */
  async init(): Promise<void> {
    if (this.#ready) return;
    this.#initializing ??= (async () => {
      this.#lastInitAttempt = Date.now();
      try {
        await this.#server.initialize();
      } catch (err) {
        this.#initFailures.inc();
        throw new FacilitatorUnavailableError(
          `x402 facilitator unreachable: ${err instanceof Error ? (err.cause ?? err.message) : err}`,
        );
      }
      if (!this.#server.getSupportedKind(2, this.#cfg.network, "exact")) {
        throw new Error(`the x402 facilitator does not support scheme exact on ${this.#cfg.network}`);
      }
      this.#ready = true;
    })().finally(() => {
      this.#initializing = undefined;
    });
    return this.#initializing;
  }

  async #ensureReady(): Promise<void> {
    if (this.#ready) return;
    if (!this.#initializing && Date.now() - this.#lastInitAttempt < INIT_RETRY_MS) {
      throw new FacilitatorUnavailableError("x402 facilitator unreachable (retrying)");
    }
    await this.init();
  }

  async #requirementsFor(price: string): Promise<PaymentRequirements[]> {
    const cached = this.#requirements.get(price);
    if (cached) return cached;
    await this.#ensureReady();
    const { network, asset, assetName, assetVersion, assetDecimals, payTo, maxTimeoutSeconds } = this.#cfg;
    const built = await this.#server.buildPaymentRequirements({
      scheme: "exact",
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

  async challenge(call: PricedCall, error: string): Promise<Header[]> {
    const requirements = await this.#requirementsFor(call.endpoint.price);
    const paymentRequired = await this.#server.createPaymentRequiredResponse(
      requirements,
      {
        url: call.url || call.endpoint.path,
        description: call.endpoint.summary,
        mimeType: "application/json",
      },
      error || "Payment required",
    );
    return [{ name: PAYMENT_REQUIRED_HEADER, value: encodePaymentRequiredHeader(paymentRequired) }];
  }

  parse(credentials: readonly Header[]): ParseResult<ExactPayment> {
    const header =
      findHeader(credentials, PAYMENT_SIGNATURE_HEADER) ?? findHeader(credentials, LEGACY_PAYMENT_HEADER);
    if (!header) return { kind: "absent" };
    const name = header.name.toUpperCase();
    const value = header.value.trim();
    if (!value) return { kind: "invalid", reason: `${name} is empty` };
    if (value.length > MAX_HEADER_CHARS) return { kind: "invalid", reason: `${name} is too large` };
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value)) {
      return { kind: "invalid", reason: `${name} is not base64 (expected base64 of a JSON PaymentPayload)` };
    }
    let json: unknown;
    try {
      json = JSON.parse(Buffer.from(value, "base64").toString("utf8"));
    } catch {
      return {
        kind: "invalid",
        reason: `${name} does not decode to JSON (expected base64 of a JSON PaymentPayload)`,
      };
    }
    const version = (json as { x402Version?: unknown } | null)?.x402Version;
    if (version === 1) {
      return {
        kind: "invalid",
        reason: "x402 v1 payment payloads are not accepted; pay with x402 v2 (PAYMENT-SIGNATURE)",
      };
    }
    const outer = PaymentPayloadV2Schema.safeParse(json);
    if (!outer.success) {
      const issue = outer.error.issues[0];
      const where = issue?.path.length ? issue.path.join(".") : "payload";
      return {
        kind: "invalid",
        reason: `${name} is not an x402 v2 PaymentPayload: ${where}: ${issue?.message}`,
      };
    }
    const payload = json as PaymentPayload;
    if (!/^[0-9]{1,78}$/.test(payload.accepted.amount)) {
      return {
        kind: "invalid",
        reason: `${name} is not an x402 v2 PaymentPayload: accepted.amount: expected an integer string`,
      };
    }
    if (payload.accepted.scheme !== "exact") {
      return {
        kind: "invalid",
        reason: `scheme "${payload.accepted.scheme}" is not offered here; pay with scheme exact`,
      };
    }
    const inner = eip3009Payload.safeParse(payload.payload);
    if (!inner.success) {
      const issue = inner.error.issues[0];
      return {
        kind: "invalid",
        reason: `the exact payload must be an EIP-3009 authorization: payload.${issue?.path.join(".")}: ${issue?.message}`,
      };
    }
    const authorization = inner.data.authorization;
    return {
      kind: "payment",
      parsed: {
        id: paymentId(payload.accepted.network, payload.accepted.asset, authorization),
        payment: { payload, authorization },
        facts: {
          scheme: this.name,
          payer: authorization.from,
          amount: authorization.value,
          asset: payload.accepted.asset,
          paymentNetwork: payload.accepted.network,
          validBefore: Number(authorization.validBefore),
        },
      },
    };
  }

  /** Our own checks first, each with a precise reason; then the facilitator's (signature, simulation). */
  #refusal(call: PricedCall, payment: ExactPayment): string | undefined {
    const { accepted } = payment.payload;
    const { authorization } = payment;
    const cfg = this.#cfg;
    if (accepted.network !== cfg.network) {
      return `the payment is for network ${accepted.network}, but this API settles on ${cfg.network}`;
    }
    if (!sameAddress(accepted.asset, cfg.asset)) {
      return `the payment is in token ${accepted.asset}, but this API takes ${cfg.assetSymbol} ${cfg.asset}`;
    }
    if (!sameAddress(accepted.payTo, cfg.payTo) || !sameAddress(authorization.to, cfg.payTo)) {
      return `the payment pays ${authorization.to}, but this API's payTo is ${cfg.payTo}`;
    }
    const price = priceAtomic(call.endpoint.price, cfg.assetDecimals);
    const paid = BigInt(authorization.value);
    if (BigInt(accepted.amount) !== paid) {
      return "the signed amount does not equal the accepted amount";
    }
    if (paid < price) {
      return `underpaid: the payment is ${paid} atomic units, ${call.endpoint.path} costs ${price} (${call.endpoint.price} USD)`;
    }
    if (paid > price) {
      return `overpaid: scheme exact takes exactly the price, ${price} atomic units (${call.endpoint.price} USD), not ${paid}`;
    }
    const now = BigInt(Math.floor(Date.now() / 1000));
    const validBefore = BigInt(authorization.validBefore);
    if (validBefore < now + BigInt(EXPIRY_MARGIN_SECONDS)) {
      return `the payment authorization expired at ${iso(validBefore)}; sign a new payment`;
    }
    const validAfter = BigInt(authorization.validAfter);
    if (validAfter > now) return `the payment authorization is not valid until ${iso(validAfter)}`;
    return undefined;
  }

  async verify(call: PricedCall, parsed: ParsedPayment<ExactPayment>): Promise<VerifyResult> {
    const refusal = this.#refusal(call, parsed.payment);
    if (refusal) return { ok: false, code: "payment_invalid", reason: refusal };
    const requirements = await this.#matching(call, parsed.payment);
    if (!requirements) {
      return {
        ok: false,
        code: "payment_invalid",
        reason: "the payment's accepted terms do not match this endpoint's offer (see PAYMENT-REQUIRED)",
      };
    }
    let result: VerifyResponse;
    try {
      result = await this.#server.verifyPayment(parsed.payment.payload, requirements);
    } catch (err) {
      if (err instanceof VerifyError) {
        return {
          ok: false,
          code: "payment_invalid",
          reason: describe(err.invalidReason, err.invalidMessage),
        };
      }
      return this.#unavailable("verify", err);
    }
    if (!result.isValid) {
      return {
        ok: false,
        code: "payment_invalid",
        reason: describe(result.invalidReason, result.invalidMessage),
      };
    }
    if (result.payer && !sameAddress(result.payer, parsed.payment.authorization.from)) {
      return { ok: false, code: "payment_invalid", reason: "the facilitator verified a different payer" };
    }
    return { ok: true };
  }

  async settle(call: PricedCall, parsed: ParsedPayment<ExactPayment>): Promise<SettleResult> {
    const requirements = await this.#matching(call, parsed.payment);
    if (!requirements) {
      return {
        ok: false,
        code: "payment_invalid",
        reason: "the payment's accepted terms do not match this endpoint's offer",
        transaction: "",
        headers: [],
      };
    }
    let result: SettleResponse;
    try {
      result = await this.#server.settlePayment(parsed.payment.payload, requirements);
    } catch (err) {
      if (!(err instanceof SettleError)) {
        const unavailable = this.#unavailable("settle", err);
        return { ...unavailable, transaction: "", headers: [] };
      }
      result = {
        success: false,
        errorReason: err.errorReason,
        errorMessage: err.errorMessage,
        payer: err.payer,
        transaction: err.transaction,
        network: err.network,
      };
    }
    if (!result.success) {
      const reason = `settlement failed: ${describe(result.errorReason, result.errorMessage)}`;
      // The facilitator's raw message (node error text with the contract call, sender and library
      // version) is not for clients: the receipt carries the code and the same reason as the body.
      const receipt: SettleResponse = { ...result, errorMessage: reason };
      this.#logger.info(
        { errorReason: result.errorReason, detail: result.errorMessage },
        "settlement failed",
      );
      const headers: Header[] = [
        { name: PAYMENT_RESPONSE_HEADER, value: encodePaymentResponseHeader(receipt) },
      ];
      return { ok: false, code: "payment_invalid", reason, transaction: result.transaction ?? "", headers };
    }
    const headers: Header[] = [{ name: PAYMENT_RESPONSE_HEADER, value: encodePaymentResponseHeader(result) }];
    return {
      ok: true,
      transaction: result.transaction,
      headers,
      meta: { costUsdc: call.endpoint.price, paymentChain: this.#cfg.network, paymentToken: this.#cfg.asset },
    };
  }

  async #matching(call: PricedCall, payment: ExactPayment): Promise<PaymentRequirements | undefined> {
    const requirements = await this.#requirementsFor(call.endpoint.price);
    return this.#server.findMatchingRequirements(requirements, payment.payload);
  }

  #unavailable(operation: string, err: unknown): { ok: false; code: "service_unavailable"; reason: string } {
    const message = err instanceof Error ? err.message : String(err);
    this.#logger.warn({ err: message, operation }, "x402 facilitator unavailable");
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
        scheme: "exact",
        network,
        asset,
        symbol: assetSymbol,
        decimals: assetDecimals,
        payTo,
      },
    ];
  }

  async close(): Promise<void> {}
}

/**
 * What makes an EIP-3009 payment unique on chain: the token (chain + contract), the payer and the
 * payer-chosen nonce. Signature bytes are not part of it, so a re-encoded or re-signed copy of the
 * same authorization is the same payment.
 */
export function paymentId(network: string, asset: string, authorization: Eip3009Authorization): string {
  const chain = network.startsWith("eip155:") ? String(chainIdOf(network as `eip155:${string}`)) : network;
  const digest = createHash("sha256")
    .update(
      `${chain}|${asset.toLowerCase()}|${authorization.from.toLowerCase()}|${authorization.nonce.toLowerCase()}`,
    )
    .digest("hex");
  return `x402-exact:${digest}`;
}
