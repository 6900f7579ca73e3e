// The per-call payment methods the API accepts are payment-verifier's to know (DescribeMethods).
// The gateway reads them once at start and every minute after, and builds from them everything
// that names them: /api/pricing, the 402, 403 and 429 texts, /openapi.json and /llms.txt.
import { offeredSchemeNames } from "@tollgate/catalog";
import type { Logger } from "@tollgate/platform";
import type { PaymentVerifierClient } from "./clients/payment-verifier.ts";

export interface PaymentMethod {
  protocol: string;
  scheme: string;
  network: string;
  asset: string;
  symbol: string;
  decimals: number;
  payTo: string;
  /** The protocol's payment method (MPP: "tempo"); empty for x402. */
  method: string;
}

const PROTOCOL_NAMES: Record<string, string> = { x402: "x402", mpp: "MPP" };

/**
 * The scheme names of `protocol`'s methods, each as the offers name it (the catalog's
 * offeredSchemeNames: x402-batch is offered as `batch-settlement` and `x402-batch`), once each.
 */
export function schemeNames(methods: readonly PaymentMethod[], protocol: string): string[] {
  const names = methods.filter((m) => m.protocol === protocol).flatMap((m) => offeredSchemeNames(m.scheme));
  return [...new Set(names)];
}

/** "x402 (exact, batch-settlement, x402-batch) or MPP (charge, session)"; empty when nothing is accepted. */
export function describeMethods(methods: readonly PaymentMethod[]): string {
  const byProtocol = new Map<string, string[]>();
  for (const m of methods) byProtocol.set(m.protocol, schemeNames(methods, m.protocol));
  const parts = [...byProtocol].map(
    ([protocol, schemes]) => `${PROTOCOL_NAMES[protocol] ?? protocol} (${schemes.join(", ")})`,
  );
  return parts.length <= 1 ? (parts[0] ?? "") : `${parts.slice(0, -1).join(", ")} or ${parts.at(-1)}`;
}

/** The 402's message for a call that carried no credentials. */
export function paymentRequiredMessage(payPerCall: string): string {
  return payPerCall
    ? `payment required: pay per call with ${payPerCall} (the offers are in this answer's PAYMENT-REQUIRED and WWW-Authenticate headers), or send Authorization: Bearer <API key>`
    : "payment required: send Authorization: Bearer <API key> (no per-call payment can be taken right now)";
}

/** The 403's message for a key whose subscription is not active. */
export function inactiveMessage(payPerCall: string): string {
  return `the subscription behind this key is not active: check the subscription${payPerCall ? `, or pay per call with ${payPerCall}` : ""}`;
}

export interface AcceptedMethods {
  list(): readonly PaymentMethod[];
  /** describeMethods() of the current list. */
  text(): string;
  /** Called with the new list whenever it changes. */
  onChange(listener: (methods: readonly PaymentMethod[]) => void): void;
  close(): void;
}

/**
 * Asks payment-verifier for its methods, waiting up to `firstWaitMs` for the first answer (the
 * launcher starts it before the gateway), then every `refreshMs`. Until an answer arrives, or while
 * it cannot be reached, the last list known stands (at first: none).
 */
export async function watchPaymentMethods(
  payments: PaymentVerifierClient,
  logger: Logger,
  opts: { firstWaitMs?: number; refreshMs?: number } = {},
): Promise<AcceptedMethods> {
  let methods: readonly PaymentMethod[] = [];
  let text = "";
  let key = "";
  const listeners: ((m: readonly PaymentMethod[]) => void)[] = [];
  let warned = false;
  const fetchOnce = async (): Promise<boolean> => {
    try {
      const res = await payments.methods();
      const next = res.methods.map((m) => ({ ...m }));
      const nextKey = JSON.stringify(next);
      warned = false;
      if (nextKey === key) return true;
      key = nextKey;
      methods = next;
      text = describeMethods(next);
      for (const l of listeners) l(methods);
      return true;
    } catch (err) {
      if (!warned)
        logger.warn(
          { err: err instanceof Error ? err.message : err },
          "payment methods unavailable; keeping the last known",
        );
      warned = true;
      return false;
    }
  };
  const deadline = Date.now() + (opts.firstWaitMs ?? 5_000);
  while (!(await fetchOnce()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  const timer = setInterval(() => void fetchOnce(), opts.refreshMs ?? 60_000);
  timer.unref();
  return {
    list: () => methods,
    text: () => text,
    onChange: (listener) => listeners.push(listener),
    close: () => clearInterval(timer),
  };
}
