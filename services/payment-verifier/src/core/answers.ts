// Idempotent paid retries (x402's payment-identifier extension): a payment that carries an
// identifier has its first answer kept, so the same payment sent again with the same identifier
// for the same request gets that answer again: no second node call, no second charge. The same
// identifier with another payment or request is a conflict (409).
//
// Keys and bounds. A record is keyed by the payment's payer and the identifier; it is made only
// once the payment verified (a claim, held by its payment_id), so nothing is stored for a payment
// the mesh did not verify, and only the payer's own signed payment can make one for it. A retry is
// answered from a record only when its payment's fingerprint (what was signed, and the call) is
// the record's: reading an answer takes the payer's signed payment itself. The same signed payment
// for another request (another POST body, query or network) is a conflict (409), told before
// anything is reserved: that payment is the one the record was made for, verified then. The claim lives as long
// as a settlement can (reservation TTL + settling TTL), the answer `ttlMs`; an answer over
// `maxBytes` is not kept (the claim is forgotten: a retry is then answered as a used payment is).
// Only a charged call has its answer kept: a call that got no answer is released, and its claim
// forgotten with it, as is that of a settlement that failed.
import { createHash } from "node:crypto";
import type { AnswerRecord, KeptAnswer } from "../stores/answers.ts";
import {
  type Core,
  type Detected,
  detect,
  SETTLING_TTL_MS,
  splitPaymentId,
  store,
  type VerifyOutcome,
} from "./context.ts";
import type { Header, PricedCall } from "./types.ts";

type Identified = NonNullable<Extract<Detected, { kind: "payment" }>["identified"]>;

/** The record's key: the payer (as verified) and the identifier. */
function keyOf(payer: string, id: string): string {
  return `${payer.toLowerCase()}:${id}`;
}

/**
 * The same payment for the same request: what was signed (`identified.payment`, base64url), then
 * `.` and a hash of the call and what it asked (the gateway's request digest: a POST body's exact
 * bytes). Kept in two parts so that the same payment for another request is told apart (a conflict)
 * from another payment.
 */
function fingerprintOf(call: PricedCall, identified: Identified): string {
  const request = createHash("sha256")
    .update([call.endpoint.path, call.network, call.url, call.digest ?? ""].join("\n"))
    .digest("base64url");
  return `${identified.payment}.${request}`;
}

/** The record's payment is this one (its fingerprint's first part), whatever request it was for. */
function samePayment(recorded: string, identified: Identified): boolean {
  return recorded.length > identified.payment.length && recorded.startsWith(`${identified.payment}.`);
}

/** The identifier is held by this payer's other payment, or by this payment for another request. */
function conflict(scheme: string): VerifyOutcome {
  return {
    valid: false,
    code: "identifier_conflict",
    reason:
      "this payment identifier was used by this payer with another payment or for another request: pay again with a new identifier",
    headers: [],
    scheme,
  };
}

/** What a record answers a request with the same payment (replay, or still in progress). */
function answerFrom(record: AnswerRecord, scheme: string): VerifyOutcome {
  if (record.state === "answered") {
    return {
      valid: false,
      code: "payment_invalid",
      reason: "this payment identifier was answered before: its first answer is given again",
      headers: [],
      scheme,
      answer: record.answer,
    };
  }
  return {
    valid: false,
    code: "identifier_in_progress",
    reason:
      "the first request with this payment identifier and payment is still being served: retry in a second for its answer",
    headers: [],
    scheme,
  };
}

/**
 * Before a payment is reserved: the answer a request gets when its payer's identifier has a record
 * for this same payment: its first answer (or "in progress") for the same request, a conflict for
 * another request; undefined otherwise (a record of another payment is not answered here: the
 * payment is verified first, and its claim then finds the conflict).
 */
export async function findAnswer(
  core: Core,
  call: PricedCall,
  payer: string,
  scheme: string,
  identified: Identified,
): Promise<VerifyOutcome | undefined> {
  const answers = core.opts.answers;
  if (!answers) return undefined;
  const record = await store(core, () => answers.store.find(keyOf(payer, identified.id)));
  if (!record) return undefined;
  if (record.payment !== fingerprintOf(call, identified)) {
    if (!samePayment(record.payment, identified)) return undefined;
    core.opts.metrics.identifiedAnswers.inc({ scheme, outcome: "conflict" });
    return conflict(scheme);
  }
  // A Verify sent again for the same request (its first answer lost) goes on to its own claim.
  if (record.state === "pending" && record.requestId === call.requestId) return undefined;
  core.opts.metrics.identifiedAnswers.inc({
    scheme,
    outcome: record.state === "answered" ? "replayed" : "in_progress",
  });
  return answerFrom(record, scheme);
}

/**
 * After a payment verified: claims its payer's identifier for it. Another payment or request
 * holding it (or holding it first, in a race) is a 409, and this payment is released.
 */
export async function claimAnswer(
  core: Core,
  call: PricedCall,
  payer: string,
  identified: Identified,
  verified: Extract<VerifyOutcome, { valid: true }>,
  release: () => Promise<void>,
): Promise<VerifyOutcome> {
  const answers = core.opts.answers;
  if (!answers) return verified;
  const key = keyOf(payer, identified.id);
  const print = fingerprintOf(call, identified);
  const ttlMs = core.opts.reservationTtlMs + SETTLING_TTL_MS;
  let claimed: Awaited<ReturnType<typeof answers.store.claim>>;
  try {
    claimed = await store(core, () =>
      answers.store.claim(key, print, verified.paymentId, call.requestId, ttlMs),
    );
  } catch (err) {
    await release();
    throw err;
  }
  if (claimed.ok) return { ...verified, answerMaxBytes: answers.maxBytes };
  await release();
  if (claimed.current.payment === print) {
    core.opts.metrics.identifiedAnswers.inc({
      scheme: verified.scheme,
      outcome: claimed.current.state === "answered" ? "replayed" : "in_progress",
    });
    return answerFrom(claimed.current, verified.scheme);
  }
  core.opts.metrics.identifiedAnswers.inc({ scheme: verified.scheme, outcome: "conflict" });
  return conflict(verified.scheme);
}

/**
 * The call of a payment verified with an identifier was not charged (released, or its settlement
 * failed): its claim is forgotten, so a retry is served as a new call. Deferred while the store is
 * away (until then a retry is told "in progress").
 */
export function forgetAnswer(core: Core, paymentId: string, credentials: readonly Header[]): void {
  const answers = core.opts.answers;
  if (!answers) return;
  const detected = detect(core, credentials);
  const id = splitPaymentId(paymentId);
  if (detected.kind !== "payment" || !detected.identified || id?.key !== detected.payment.key) return;
  const key = keyOf(detected.payment.payer, detected.identified.id);
  const forget = () => answers.store.forget(key, paymentId).then(() => undefined);
  void forget().catch(() => core.queue.defer(core.opts.reservationTtlMs + SETTLING_TTL_MS, forget));
}

/**
 * The answer of a settled call whose Verify asked for it (answerMaxBytes): kept for a retry, or,
 * over the bound, not kept (the claim is forgotten). True when kept.
 */
export async function keepAnswer(
  core: Core,
  paymentId: string,
  credentials: readonly Header[],
  answer: KeptAnswer,
  tooLarge: boolean,
): Promise<boolean> {
  const answers = core.opts.answers;
  if (!answers) return false;
  const detected = detect(core, credentials);
  const id = splitPaymentId(paymentId);
  if (detected.kind !== "payment" || !detected.identified || id?.key !== detected.payment.key) return false;
  const { scheme, payment, identified } = detected;
  const key = keyOf(payment.payer, identified.id);
  if (tooLarge || Buffer.byteLength(answer.body) > answers.maxBytes) {
    core.opts.metrics.identifiedAnswers.inc({ scheme: scheme.name, outcome: "too_large" });
    await store(core, () => answers.store.forget(key, paymentId));
    return false;
  }
  const kept = await store(core, () => answers.store.keep(key, paymentId, answer, answers.ttlMs));
  core.opts.metrics.identifiedAnswers.inc({ scheme: scheme.name, outcome: kept ? "kept" : "lapsed" });
  return kept;
}
