// The PaymentVerifierService behaviour, the same for every scheme: pick the scheme that recognises
// the credentials, verify and reserve (at most once across replicas), settle after a successful
// call or release after a failed one, and record every settlement outcome as an event.
// Payment problems are answers (valid=false / settled=false with an error code), never gRPC errors;
// only a malformed request (no or unknown endpoint) fails the call.
import { grpc, type Logger, ServiceError } from "@tollgate/platform";
import type { ChallengeRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/ChallengeRequest";
import type { ChallengeResponse } from "@tollgate/platform/generated/tollgate/payment/v1/ChallengeResponse";
import type { DescribeMethodsResponse } from "@tollgate/platform/generated/tollgate/payment/v1/DescribeMethodsResponse";
import type { ReleaseRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/ReleaseRequest";
import type { ReleaseResponse } from "@tollgate/platform/generated/tollgate/payment/v1/ReleaseResponse";
import type { SettleRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/SettleRequest";
import type { SettleResponse } from "@tollgate/platform/generated/tollgate/payment/v1/SettleResponse";
import type { VerifyRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/VerifyRequest";
import type { VerifyResponse } from "@tollgate/platform/generated/tollgate/payment/v1/VerifyResponse";
import type { SettlementEvent, SettlementEvents, SettlementOutcome } from "./adapters/events.ts";
import { challengeHeaders, pricedCall } from "./challenge.ts";
import { FacilitatorUnavailableError } from "./facilitator.ts";
import type { PaymentMetrics } from "./metrics.ts";
import type { PaymentFacts, Reservation, ReservationStore } from "./reservations.ts";
import type {
  Header,
  ParsedPayment,
  PaymentErrorCode,
  PaymentScheme,
  PricedCall,
  SettleResult,
} from "./schemes/scheme.ts";

/** A settling payment is held this long if the process dies mid-settlement. */
const SETTLING_TTL_MS = 5 * 60_000;
/** A settled payment is remembered until it could no longer be collected, plus this margin. */
const SETTLED_MARGIN_MS = 10 * 60_000;
const SETTLED_MAX_MS = 7 * 24 * 3_600_000;

export interface PaymentsOptions {
  schemes: readonly PaymentScheme[];
  reservations: ReservationStore;
  events: SettlementEvents;
  metrics: PaymentMetrics;
  logger: Logger;
  reservationTtlMs: number;
}

type Detected =
  | { kind: "absent" }
  | { kind: "invalid"; scheme: PaymentScheme; reason: string }
  | { kind: "payment"; scheme: PaymentScheme; parsed: ParsedPayment<unknown> };

/** The reservation store could not be reached: refuse rather than risk serving a payment twice. */
class StoreUnavailableError extends Error {}

export class Payments {
  readonly #schemes: readonly PaymentScheme[];
  readonly #reservations: ReservationStore;
  readonly #events: SettlementEvents;
  readonly #metrics: PaymentMetrics;
  readonly #logger: Logger;
  readonly #reservationTtlMs: number;

  constructor(opts: PaymentsOptions) {
    this.#schemes = opts.schemes;
    this.#reservations = opts.reservations;
    this.#events = opts.events;
    this.#metrics = opts.metrics;
    this.#logger = opts.logger;
    this.#reservationTtlMs = opts.reservationTtlMs;
  }

  async challenge(req: ChallengeRequest__Output): Promise<ChallengeResponse> {
    const call = pricedCall(req.requestId, req.resource);
    try {
      return { headers: await challengeHeaders(this.#schemes, call, req.error) };
    } catch (err) {
      if (err instanceof FacilitatorUnavailableError) {
        throw new ServiceError(
          grpc.status.UNAVAILABLE,
          "service_unavailable",
          "the payment facilitator is unavailable",
        );
      }
      throw err;
    }
  }

  async verify(req: VerifyRequest__Output): Promise<VerifyResponse> {
    const call = pricedCall(req.requestId, req.resource);
    const started = performance.now();
    const detected = this.#detect(req.credentials);
    const scheme = detected.kind === "absent" ? "none" : detected.scheme.name;
    const response = await this.#verify(call, detected);
    const outcome = response.valid ? "valid" : (response.errorCode ?? "payment_invalid");
    this.#metrics.verifySeconds.observe({ scheme, outcome }, (performance.now() - started) / 1000);
    return response;
  }

  async #verify(call: PricedCall, detected: Detected): Promise<VerifyResponse> {
    if (detected.kind === "absent") {
      return this.#refuse(call, "payment_required", "no payment: send an x402 PAYMENT-SIGNATURE header");
    }
    if (detected.kind === "invalid") return this.#refuse(call, "payment_invalid", detected.reason);
    const { scheme, parsed } = detected;
    const facts = this.#facts(call, parsed);
    try {
      // Cheap replay check first: a used or in-flight payment needs no facilitator round trip.
      const existing = await this.#store(() => this.#reservations.get(parsed.id));
      if (existing) {
        // A retried Verify of the same call (e.g. after a lost answer) keeps its reservation.
        if (existing.state === "reserved" && call.requestId && existing.requestId === call.requestId) {
          return this.#valid(parsed.id, facts, scheme);
        }
        return this.#conflict(call, scheme, existing, "verify");
      }
      const verdict = await scheme.verify(call, parsed);
      if (!verdict.ok) return this.#refuse(call, verdict.code, verdict.reason);
      // Two verifies of one payload can both pass the facilitator; only one takes the reservation.
      const reserved = await this.#store(() =>
        this.#reservations.reserve(parsed.id, facts, this.#reservationTtlMs),
      );
      if (!reserved) {
        const current = await this.#store(() => this.#reservations.get(parsed.id));
        return this.#conflict(call, scheme, current, "verify");
      }
      return this.#valid(parsed.id, facts, scheme);
    } catch (err) {
      return this.#unavailableVerify(err);
    }
  }

  async settle(req: SettleRequest__Output): Promise<SettleResponse> {
    const call = pricedCall(req.requestId, req.resource);
    if (!req.paymentId) {
      throw new ServiceError(grpc.status.INVALID_ARGUMENT, "invalid_parameter", "payment_id is required");
    }
    const started = performance.now();
    const detected = this.#detect(req.credentials);
    const scheme = detected.kind === "absent" ? "none" : detected.scheme.name;
    const response = await this.#settle(call, req.paymentId, detected);
    const outcome = response.settled ? "settled" : (response.errorCode ?? "payment_invalid");
    this.#metrics.settleSeconds.observe({ scheme, outcome }, (performance.now() - started) / 1000);
    return response;
  }

  async #settle(call: PricedCall, paymentId: string, detected: Detected): Promise<SettleResponse> {
    if (detected.kind === "absent") {
      return this.#settleRefusal(call, "payment_required", "no payment credential to settle");
    }
    if (detected.kind === "invalid") return this.#settleRefusal(call, "payment_invalid", detected.reason);
    const { scheme, parsed } = detected;
    if (parsed.id !== paymentId) {
      return this.#settleRefusal(
        call,
        "payment_invalid",
        "the credentials are not the payment verified as payment_id",
      );
    }
    const facts = this.#facts(call, parsed);
    let begun: Awaited<ReturnType<ReservationStore["beginSettle"]>>;
    try {
      begun = await this.#store(() => this.#reservations.beginSettle(parsed.id, facts, SETTLING_TTL_MS));
    } catch {
      return {
        settled: false,
        errorCode: "service_unavailable",
        reason: "payment replay protection is unavailable",
      };
    }
    if (!begun.ok) {
      const current = begun.current;
      // A repeated Settle of the same call (e.g. a retry after a lost answer) gets the same answer.
      if (current?.state === "settled" && current.requestId === facts.requestId && current.receipt) {
        return this.#settledResponse(
          call,
          current.transaction,
          [{ name: "PAYMENT-RESPONSE", value: current.receipt }],
          scheme,
        );
      }
      this.#metrics.reservationConflicts.inc({ scheme: scheme.name, operation: "settle" });
      return this.#settleRefusal(call, "payment_invalid", conflictReason(current));
    }

    let result: SettleResult;
    try {
      result = await scheme.settle(call, parsed);
    } catch (err) {
      if (!(err instanceof FacilitatorUnavailableError))
        this.#logger.error({ err }, "settlement failed unexpectedly");
      const reason =
        err instanceof FacilitatorUnavailableError ? err.message : "settlement failed unexpectedly";
      result = { ok: false, code: "service_unavailable", reason, transaction: "", headers: [] };
    }
    if (result.ok) {
      const receipt = findReceipt(result.headers);
      try {
        await this.#reservations.markSettled(
          parsed.id,
          facts,
          result.transaction,
          receipt,
          settledRetentionMs(facts),
        );
      } catch (err) {
        // The money moved; the settling marker (SETTLING_TTL_MS) and the on-chain nonce still refuse replays.
        this.#logger.error({ err, paymentId: parsed.id }, "could not record a settled payment");
      }
      this.#publish(parsed.id, facts, "settled", result.transaction, null);
      return {
        settled: true,
        errorCode: "",
        reason: "",
        headers: result.headers,
        meta: result.meta,
        transaction: result.transaction,
      };
    }

    // Nothing was collected (or it is pending on chain and the nonce guards it): forget the
    // reservation; the client was not served and may pay again.
    try {
      await this.#reservations.drop(parsed.id);
    } catch (err) {
      this.#logger.warn({ err, paymentId: parsed.id }, "could not drop a failed payment's reservation");
    }
    this.#publish(parsed.id, facts, "failed", result.transaction || null, result.reason);
    const challenge =
      result.code === "service_unavailable" ? [] : await this.#challengeOrNone(call, result.reason);
    return {
      settled: false,
      errorCode: result.code,
      reason: result.reason,
      headers: [...result.headers, ...challenge],
      transaction: result.transaction,
    };
  }

  async release(req: ReleaseRequest__Output): Promise<ReleaseResponse> {
    if (!req.paymentId) return {};
    let freed: Reservation | undefined;
    try {
      freed = await this.#reservations.release(req.paymentId, req.requestId);
    } catch (err) {
      // The reservation lapses on its own after its TTL.
      this.#logger.warn({ err, paymentId: req.paymentId }, "could not release a payment reservation");
      return {};
    }
    if (freed) {
      this.#metrics.releases.inc({ scheme: freed.scheme });
      this.#publish(req.paymentId, freed, "released", null, req.reason || "call_failed");
    }
    return {};
  }

  describeMethods(): DescribeMethodsResponse {
    return { methods: this.#schemes.flatMap((s) => s.methods()) };
  }

  // ---- helpers ----

  #valid(paymentId: string, facts: PaymentFacts, scheme: PaymentScheme): VerifyResponse {
    return {
      valid: true,
      paymentId,
      payer: facts.payer,
      scheme: scheme.name,
      errorCode: "",
      reason: "",
      headers: [],
    };
  }

  #detect(credentials: readonly Header[]): Detected {
    for (const scheme of this.#schemes) {
      const result = scheme.parse(credentials);
      if (result.kind === "invalid") return { kind: "invalid", scheme, reason: result.reason };
      if (result.kind === "payment") return { kind: "payment", scheme, parsed: result.parsed };
    }
    return { kind: "absent" };
  }

  #facts(call: PricedCall, parsed: ParsedPayment<unknown>): PaymentFacts {
    return {
      ...parsed.facts,
      requestId: call.requestId,
      endpoint: call.endpoint.path,
      network: call.network,
    };
  }

  async #store<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      this.#logger.warn({ err: err instanceof Error ? err.message : err }, "reservation store unavailable");
      throw new StoreUnavailableError("payment replay protection is unavailable");
    }
  }

  async #challengeOrNone(call: PricedCall, error: string): Promise<Header[]> {
    try {
      return await challengeHeaders(this.#schemes, call, error);
    } catch {
      return []; // facilitator unknown yet: the refusal itself still stands
    }
  }

  async #refuse(call: PricedCall, code: PaymentErrorCode, reason: string): Promise<VerifyResponse> {
    const headers = code === "service_unavailable" ? [] : await this.#challengeOrNone(call, reason);
    return { valid: false, errorCode: code, reason, headers, paymentId: "", payer: "", scheme: "" };
  }

  async #conflict(
    call: PricedCall,
    scheme: PaymentScheme,
    current: Reservation | undefined,
    operation: string,
  ): Promise<VerifyResponse> {
    this.#metrics.reservationConflicts.inc({ scheme: scheme.name, operation });
    return this.#refuse(call, "payment_invalid", conflictReason(current));
  }

  #unavailableVerify(err: unknown): VerifyResponse {
    if (!(err instanceof StoreUnavailableError) && !(err instanceof FacilitatorUnavailableError)) throw err;
    return {
      valid: false,
      errorCode: "service_unavailable",
      reason: err.message,
      headers: [],
      paymentId: "",
      payer: "",
      scheme: "",
    };
  }

  async #settleRefusal(call: PricedCall, code: PaymentErrorCode, reason: string): Promise<SettleResponse> {
    return { settled: false, errorCode: code, reason, headers: await this.#challengeOrNone(call, reason) };
  }

  #settledResponse(
    call: PricedCall,
    transaction: string,
    headers: Header[],
    scheme: PaymentScheme,
  ): SettleResponse {
    const method = scheme.methods()[0];
    return {
      settled: true,
      errorCode: "",
      reason: "",
      headers,
      transaction,
      meta: {
        costUsdc: call.endpoint.price,
        paymentChain: method?.network ?? "",
        paymentToken: method?.asset ?? "",
      },
    };
  }

  #publish(
    paymentId: string,
    facts: PaymentFacts,
    outcome: SettlementOutcome,
    transaction: string | null,
    reason: string | null,
  ): void {
    const requestId = facts.requestId || paymentId;
    const event: SettlementEvent = {
      // One id per outcome of one call: outbox retries and replays are deduplicated by the stream.
      id: `${requestId}:${outcome}`,
      request_id: requestId,
      endpoint: facts.endpoint,
      network: facts.network,
      scheme: facts.scheme,
      payer: facts.payer,
      amount: facts.amount,
      asset: facts.asset,
      payment_network: facts.paymentNetwork,
      transaction,
      outcome,
      reason: reason === null ? null : reason.slice(0, 1000),
      time: new Date().toISOString(),
    };
    try {
      this.#events.publish(event);
    } catch (err) {
      this.#logger.error({ err, event }, "settlement event rejected");
    }
  }
}

function conflictReason(current: Reservation | undefined): string {
  if (current?.state === "settled") {
    return `this payment was already used${current.transaction ? ` (settled in transaction ${current.transaction})` : ""}; sign a new payment`;
  }
  return "this payment is already in use by another request";
}

function findReceipt(headers: readonly Header[]): string {
  return headers.find((h) => h.name.toUpperCase() === "PAYMENT-RESPONSE")?.value ?? "";
}

function settledRetentionMs(facts: PaymentFacts): number {
  const untilExpiry = Math.max(0, facts.validBefore * 1000 - Date.now());
  return Math.min(untilExpiry + SETTLED_MARGIN_MS, SETTLED_MAX_MS);
}
