// How the core answers when it does not serve a payment: the 402's offers (every protocol's one
// rendering of its schemes'), a refusal in its protocol's problem shape with the offers to pay
// again, a 429 of the attempt limits, a 503, and the log of a call answered failed while its payer
// paid. Payment problems are answers, never exceptions: every Verify and Settle refusal is shaped
// here.

import type { Reservation } from "../stores/reservations.ts";
import type { Core, SettleOutcome, VerifyOutcome } from "./context.ts";
import type {
  Header,
  ParsedPayment,
  PaymentErrorCode,
  PaymentProtocol,
  PaymentScheme,
  PricedCall,
  Problem,
  SettleResult,
  Verdict,
} from "./types.ts";

/** The longest refusal text a 402's offers carry in their headers (see challenge). */
const ERROR_IN_HEADERS_MAX = 300;

/**
 * Every protocol's one rendering of its schemes' offers. A scheme that cannot take payments now
 * drops out alone; the 402 still answers with the others.
 */
export async function challenge(core: Core, call: PricedCall, refusal = ""): Promise<Header[]> {
  // The offers' headers repeat the refusal, which may quote what the client sent (a schema
  // message naming an unknown key): bounded, so the 402 stays under the 16 KB of headers HTTP
  // clients read. The answer's body keeps the whole of it.
  const error =
    refusal.length > ERROR_IN_HEADERS_MAX ? `${refusal.slice(0, ERROR_IN_HEADERS_MAX - 1)}…` : refusal;
  const rendered = await Promise.all(
    core.protocols.map(async ({ protocol, schemes: all }) => {
      const schemes = all.filter((s) => payable(call, s.name));
      const offers = await Promise.allSettled(schemes.map((s) => s.offers(call, error)));
      const up = offers.flatMap((o, i) => {
        if (o.status === "fulfilled") return o.value;
        const scheme = schemes[i]?.name;
        const reason = o.reason instanceof Error ? o.reason.message : String(o.reason);
        core.opts.logger.warn(
          { scheme, reason },
          "payment scheme left out of the 402: it cannot take payments now",
        );
        return [];
      });
      return up.length > 0 ? protocol.render(call, up, error) : [];
    }),
  );
  return rendered.flat();
}

/** Whether `scheme` may pay for the call (the catalog's `payWith`; absent, every scheme). */
export function payable(call: PricedCall, scheme: string): boolean {
  return call.endpoint.payWith?.includes(scheme) ?? true;
}

/**
 * The problem a protocol defines for a refusal: the credential's protocol, or (no credential)
 * the first protocol that defines one, since the 402 offers every protocol.
 */
export function problemFor(
  core: Core,
  protocol: PaymentProtocol | undefined,
  code: PaymentErrorCode,
  reason: string,
): Problem | undefined {
  if (protocol) return protocol.problem?.(code, reason);
  for (const p of core.protocols) {
    const problem = p.protocol.problem?.(code, reason);
    if (problem) return problem;
  }
  return undefined;
}

async function challengeOrNone(core: Core, call: PricedCall, error: string): Promise<Header[]> {
  try {
    return await challenge(core, call, error);
  } catch {
    return []; // no offer can be built now: the refusal itself still stands
  }
}

/** A scheme's refusal: its own answer headers (a corrective offer), or the 402's. */
export async function refused(
  core: Core,
  call: PricedCall,
  scheme: PaymentScheme,
  verdict: Extract<Verdict, { ok: false }>,
  print: string,
): Promise<VerifyOutcome> {
  if (verdict.final) core.opts.refusals.remember(print, verdict.reason, core.now());
  const problem = verdict.problem ?? scheme.protocol.problem?.(verdict.code, verdict.reason);
  if (verdict.challenge) {
    const { code, reason } = verdict;
    return {
      valid: false,
      code,
      reason,
      headers: verdict.challenge,
      scheme: scheme.name,
      ...(problem ? { problem } : {}),
    };
  }
  return refuse(core, call, scheme.name, verdict.code, verdict.reason, problem);
}

/** A Verify refusal with the 402's offers (none for a 503). */
export async function refuse(
  core: Core,
  call: PricedCall,
  scheme: string,
  code: PaymentErrorCode,
  reason: string,
  problem?: Problem,
): Promise<VerifyOutcome> {
  const headers = code === "service_unavailable" ? [] : await challengeOrNone(core, call, reason);
  return { valid: false, code, reason, headers, scheme, ...(problem ? { problem } : {}) };
}

/** A payment held by another use of it (`operation`: verify or settle). */
export async function conflict(
  core: Core,
  call: PricedCall,
  scheme: PaymentScheme,
  current: Reservation | undefined,
  operation: string,
): Promise<VerifyOutcome> {
  core.opts.metrics.reservationConflicts.inc({ scheme: scheme.name, operation });
  const reason = conflictReason(current);
  return refuseInvalid(core, call, scheme, reason);
}

/** `payment_invalid` for `scheme`'s payment, in its protocol's problem shape. */
export function refuseInvalid(
  core: Core,
  call: PricedCall,
  scheme: PaymentScheme,
  reason: string,
): Promise<VerifyOutcome> {
  return refuse(
    core,
    call,
    scheme.name,
    "payment_invalid",
    reason,
    scheme.protocol.problem?.("payment_invalid", reason),
  );
}

/** The 429 of an attempt limit (`scope`: client or payer). */
export function limited(core: Core, scope: string, scheme: string): VerifyOutcome {
  core.opts.metrics.attemptsLimited.inc({ scope });
  return {
    valid: false,
    code: "rate_limited",
    reason: `too many payment attempts from this ${scope}; back off briefly (Retry-After: 1) and retry`,
    headers: [],
    scheme,
  };
}

export function settleUnavailable(reason: string): SettleOutcome {
  return { settled: false, code: "service_unavailable", reason, headers: [], transaction: "" };
}

/** A Settle refusal with the 402's offers, in `protocol`'s problem shape. */
export async function settleRefusal(
  core: Core,
  call: PricedCall,
  code: PaymentErrorCode,
  reason: string,
  protocol?: PaymentProtocol,
): Promise<SettleOutcome> {
  const problem = protocol?.problem?.(code, reason);
  return {
    settled: false,
    code,
    reason,
    headers: await challengeOrNone(core, call, reason),
    transaction: "",
    ...(problem ? { problem } : {}),
  };
}

/** A settlement that collected nothing: the scheme's receipt, and the offers unless it is a 503. */
export async function settleFailed(
  core: Core,
  call: PricedCall,
  scheme: PaymentScheme,
  result: Extract<SettleResult, { ok: false }>,
): Promise<SettleOutcome> {
  const offer = result.code === "service_unavailable" ? [] : await challengeOrNone(core, call, result.reason);
  const problem = result.problem ?? scheme.protocol.problem?.(result.code, result.reason);
  return {
    settled: false,
    code: result.code,
    reason: result.reason,
    headers: [...result.receipt, ...offer],
    transaction: result.transaction,
    ...(problem ? { problem } : {}),
  };
}

export function conflictReason(current: Reservation | undefined): string {
  if (current?.state === "settled") {
    return `this payment was already used${current.transaction ? ` (settled in ${current.transaction})` : ""}; sign a new payment`;
  }
  if (current?.state === "settling")
    return "this payment is being settled for another request; sign a new payment";
  return "this payment is already in use by another request; sign a new payment";
}

/**
 * A call answered failed (the gateway answers 503, no data) while its payer paid, or may yet pay:
 * `collected_late`, its settlement collected after the caller's deadline (the one the gateway
 * sent: it has answered by then); `still_settling`, another Settle of the call still at it when
 * this one had to answer; `pending`, a transfer broadcast and not confirmed in time (a retry
 * with the same payment is served by it, if the client retries). Nothing here can move money
 * back (the payee's key is not ours): counted and logged at error level with the mesh's request
 * id and the reference (transaction or channel), for a refund by hand (docs/runbook.md). One call
 * can be logged twice (a Settle that answered `still_settling`, then its owner `collected_late`).
 */
export function chargedForNoData(
  core: Core,
  what: "collected_late" | "still_settling" | "pending",
  call: PricedCall,
  scheme: PaymentScheme,
  payment: ParsedPayment,
  reference = "",
): void {
  const counter = what === "collected_late" ? "settledAfterDeadline" : "settleOutcomeUnknown";
  core.opts.metrics[counter].inc({ scheme: scheme.name });
  core.opts.logger.error(
    {
      scheme: scheme.name,
      what,
      requestId: call.requestId,
      payer: payment.payer,
      endpoint: call.endpoint.path,
      reference,
    },
    what === "collected_late"
      ? "a payment settled after its caller stopped waiting: the call was answered 503 and the payer paid for it (refund it: docs/runbook.md)"
      : "a Settle answered 503 while its payment may still collect: the ledger shows whether the payer paid for it (docs/runbook.md)",
  );
}
