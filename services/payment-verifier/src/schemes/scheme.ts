// The contract every payment scheme implements (x402 exact now; x402-batch and MPP later). A scheme
// speaks its protocol: challenge headers, parsing and checking credentials, settling through its
// facilitator. Reservations, events and metrics are the orchestrator's (payments.ts), the same
// for every scheme.
import type { Endpoint } from "@tollgate/catalog";
import type { PaymentFacts } from "../reservations.ts";

export interface Header {
  name: string;
  value: string;
}

/** One paid call: the catalog endpoint (its price), the API network and the URL the client called. */
export interface PricedCall {
  requestId: string;
  endpoint: Endpoint;
  /** The API network (ethereum, sepolia, ...), not the settlement chain. */
  network: string;
  url: string;
}

/** Stable error codes a payment outcome carries to the gateway. */
export type PaymentErrorCode = "payment_required" | "payment_invalid" | "service_unavailable";

/** A credential this scheme recognised and decoded; `id` names the payment across replicas. */
export interface ParsedPayment<P> {
  id: string;
  payment: P;
  /** Facts known before verification (payer, amount, ...), minus the per-request ones. */
  facts: Omit<PaymentFacts, "requestId" | "endpoint" | "network">;
}

export type ParseResult<P> =
  | { kind: "absent" }
  | { kind: "invalid"; reason: string }
  | { kind: "payment"; parsed: ParsedPayment<P> };

export type VerifyResult = { ok: true } | { ok: false; code: PaymentErrorCode; reason: string };

export type SettleResult =
  | {
      ok: true;
      transaction: string;
      /** Headers for the client, e.g. PAYMENT-RESPONSE. */
      headers: Header[];
      meta: { costUsdc: string; paymentChain: string; paymentToken: string };
    }
  | { ok: false; code: PaymentErrorCode; reason: string; transaction: string; headers: Header[] };

export interface PaymentMethodInfo {
  protocol: string;
  scheme: string;
  network: string;
  asset: string;
  symbol: string;
  decimals: number;
  payTo: string;
}

export interface PaymentScheme<P = unknown> {
  /** Name in metrics and settlement events, e.g. "exact". */
  readonly name: string;
  /** Readies the scheme (e.g. learns what the facilitator supports); may be retried. */
  init(): Promise<void>;
  /** Headers offering this scheme on a 402 answer. */
  challenge(call: PricedCall, error: string): Promise<Header[]>;
  /** Finds and decodes this scheme's credential among the request's payment headers. Never throws. */
  parse(credentials: readonly Header[]): ParseResult<P>;
  /** Checks the payment against the call's price and terms, and with the facilitator. */
  verify(call: PricedCall, parsed: ParsedPayment<P>): Promise<VerifyResult>;
  /** Collects a verified payment. */
  settle(call: PricedCall, parsed: ParsedPayment<P>): Promise<SettleResult>;
  /** The payment methods this scheme offers, for /api/pricing. */
  methods(): PaymentMethodInfo[];
  close(): Promise<void>;
}

/** Case-insensitive header lookup (HTTP header names are case-insensitive). */
export function findHeader(headers: readonly Header[], name: string): Header | undefined {
  const wanted = name.toLowerCase();
  return headers.find((h) => h.name.toLowerCase() === wanted);
}
