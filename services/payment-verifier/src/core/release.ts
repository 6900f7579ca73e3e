// Frees a verified payment whose call got no answer (or whose Verify or Settle was answered 503):
// only the holder of its token can, the release is recorded as an event, and its scheme lets go of
// what it held for it. An unreachable store defers the release to the retry queue, under one
// release id however often it runs, so the scheme's undo happens once.
import type { ReleaseMark, Reservation } from "../stores/reservations.ts";
import { forgetAnswer } from "./answers.ts";
import { type Core, detect, GUARDED, type PaymentRef, SETTLING_TTL_MS, splitPaymentId } from "./context.ts";
import { releaseGuarded } from "./self-guarded.ts";
import type { Header, ParsedPayment, PaymentScheme, PricedCall } from "./types.ts";

/** Frees a verified payment whose call got no answer. Only the holder of the token can. */
export async function release(
  core: Core,
  requestId: string,
  call: PricedCall | undefined,
  paymentId: string,
  credentials: readonly Header[],
  reason: string,
): Promise<void> {
  const id = splitPaymentId(paymentId);
  if (!id) return;
  // One id for this release however often it runs: a run whose delete landed with its answer lost
  // is answered what it freed when run again, so the scheme's undo still happens.
  const run = releaser(core, requestId, call, id, credentials, reason);
  // Not charged: a payment identifier this payment claimed keeps no answer (core/answers.ts).
  forgetAnswer(core, paymentId, credentials);
  await run().catch((err: unknown) => {
    core.opts.logger.warn({ err }, "could not release a payment reservation: retried once the store answers");
    core.queue.defer(core.opts.reservationTtlMs, run);
  });
}

/**
 * A release of reservation `id` (see releaseNow) under one mesh-made release id, to run until it
 * answers; once it has, running it again does nothing (a deferred job that runs it may be retried
 * for another of its steps, and the scheme's undo must run once).
 */
export function releaser(
  core: Core,
  requestId: string,
  call: PricedCall | undefined,
  id: PaymentRef,
  credentials: readonly Header[],
  reason: string,
  hold?: string,
): () => Promise<void> {
  // Remembered past every deferral that may run it (a reservation's TTL, a settlement's).
  const keepMs = Math.max(core.opts.reservationTtlMs, SETTLING_TTL_MS) + 60_000;
  const mark = { id: core.attemptId(), keepMs };
  let answered = false;
  return async () => {
    if (answered) return;
    await releaseNow(core, requestId, call, id, credentials, reason, hold, mark);
    answered = true;
  };
}

/** The release itself; throws when the store is unreachable (the caller defers it). */
async function releaseNow(
  core: Core,
  requestId: string,
  call: PricedCall | undefined,
  id: PaymentRef,
  credentials: readonly Header[],
  reason: string,
  hold?: string,
  mark?: ReleaseMark,
): Promise<void> {
  if (id.token.startsWith(GUARDED)) return releaseGuarded(core, requestId, call, id, credentials, reason);
  const freed = await core.opts.reservations.release(id.key, id.token, requestId, mark);
  if (freed) await undo(core, freed, call, id, credentials, reason, hold);
}

/** Records a freed reservation as released and has its scheme undo what it held for it. */
export async function undo(
  core: Core,
  freed: Reservation,
  call: PricedCall | undefined,
  id: PaymentRef,
  credentials: readonly Header[],
  reason: string,
  hold?: string,
): Promise<void> {
  core.opts.metrics.releases.inc({ scheme: freed.scheme });
  core.opts.events.record(freed, "released", null, reason || "call_failed");
  const detected = detect(core, credentials);
  if (!call || detected.kind !== "payment" || detected.payment.key !== id.key) return;
  await letGo(core, call, detected.scheme, detected.payment, hold || freed.hold);
}

/**
 * Has `scheme` let go of what it holds for a payment that will not be settled; a scheme that
 * cannot now is asked again once it can (deferred).
 */
export async function letGo(
  core: Core,
  call: PricedCall,
  scheme: PaymentScheme,
  payment: ParsedPayment,
  hold: string,
): Promise<void> {
  const undoHold = scheme.release?.bind(scheme);
  if (!undoHold) return;
  await undoHold(call, payment, hold).catch((err: unknown) => {
    core.opts.logger.warn(
      { err, scheme: scheme.name },
      "scheme could not undo its hold on a payment that will not be settled",
    );
    core.queue.defer(core.opts.reservationTtlMs, () => undoHold(call, payment, hold));
  });
}
