// Settle, after the node answered: check the credentials are the payment verified, claim the call's
// settlement for this replica (takeover.ts), have the scheme collect it once, and record it settled
// (or drop it when nothing moved, so the client may pay again). One Settle of a call runs at a
// time here; a second one joins it, and a retry after a lost answer gets the same answer.
import type { Reservation } from "../stores/reservations.ts";
import { forgetAnswer } from "./answers.ts";
import {
  type Core,
  type Detected,
  detect,
  eventOutcome,
  fingerprint,
  GUARDED,
  outcomeOf,
  type PaymentRef,
  referenceOf,
  SETTLING_TTL_MS,
  type SettleOutcome,
  splitPaymentId,
} from "./context.ts";
import { chargedForNoData, conflictReason, settleFailed, settleRefusal } from "./refusals.ts";
import { settleGuarded } from "./self-guarded.ts";
import { claim } from "./takeover.ts";
import {
  type Collection,
  FacilitatorUnavailableError,
  type Header,
  type ParsedPayment,
  type PaymentScheme,
  type PricedCall,
} from "./types.ts";

/** `deadline`: when the caller stops waiting for the answer (epoch ms), if it said. */
export async function settle(
  core: Core,
  call: PricedCall,
  paymentId: string,
  credentials: readonly Header[],
  deadline = Number.POSITIVE_INFINITY,
): Promise<SettleOutcome> {
  const started = performance.now();
  const detected = detect(core, credentials);
  const scheme = detected.kind === "payment" ? detected.scheme.name : "none";
  const outcome = await settleDetected(core, call, paymentId, detected, credentials, deadline);
  // Not charged: a payment identifier this payment claimed keeps no answer (core/answers.ts).
  if (!outcome.settled) forgetAnswer(core, paymentId, credentials);
  const label = outcome.settled ? outcomeOf(outcome.collection) : outcome.code;
  core.opts.metrics.settleSeconds.observe({ scheme, outcome: label }, (performance.now() - started) / 1000);
  return outcome;
}

async function settleDetected(
  core: Core,
  call: PricedCall,
  paymentId: string,
  detected: Detected,
  credentials: readonly Header[],
  deadline: number,
): Promise<SettleOutcome> {
  const id = splitPaymentId(paymentId);
  if (detected.kind !== "payment" || !id || id.key !== detected.payment.key) {
    return settleRefusal(
      core,
      call,
      "payment_invalid",
      "the credentials are not the payment verified as payment_id",
      detected.kind === "invalid" ? detected.protocol : undefined,
    );
  }
  const { scheme, payment } = detected;
  if (id.token.startsWith(GUARDED))
    return settleGuarded(core, call, scheme, payment, id, credentials, deadline);
  // One Settle of a call at a time: a second one here joins the first (no store round trip).
  const callKey = `${paymentId}\n${call.requestId}`;
  const joined = core.inFlight.get(callKey);
  if (joined) return joined;
  const claimed = await claim(core, call, scheme, payment, id, credentials, callKey, deadline);
  if (claimed.kind === "answered") return claimed.outcome;
  const begun = claimed.begun;
  if (!begun.ok) {
    const current = begun.current;
    // A repeated Settle of the same call (a retry after a lost answer) gets the same answer.
    if (
      current?.state === "settled" &&
      current.token === id.token &&
      current.requestId === call.requestId &&
      current.receipt
    ) {
      return {
        settled: true,
        headers: JSON.parse(current.receipt) as Header[],
        meta: scheme.meta(call, payment),
        collection: { kind: "transaction", transaction: current.transaction },
      };
    }
    core.opts.metrics.reservationConflicts.inc({ scheme: scheme.name, operation: "settle" });
    return settleRefusal(core, call, "payment_invalid", conflictReason(current), scheme.protocol);
  }
  const running = run(
    core,
    call,
    scheme,
    payment,
    id,
    credentials,
    begun.reservation,
    begun.takenOver,
    deadline,
  );
  const answer = running.then((r) => r.outcome);
  core.inFlight.set(callKey, answer);
  let recorded: Promise<void> | undefined;
  try {
    const ran = await running;
    recorded = ran.recorded;
    if (ran.outcome.settled && core.now() > deadline)
      chargedForNoData(core, "collected_late", call, scheme, payment, referenceOf(ran.outcome.collection));
    return ran.outcome;
  } finally {
    // Until the store says `settled`, a retry of this call here joins the answer given: the
    // store still says `settling` under our (live) ownership, which would only make it wait.
    const forget = () => {
      if (core.inFlight.get(callKey) === answer) core.inFlight.delete(callKey);
    };
    if (recorded) void recorded.then(forget);
    else forget();
  }
}

/**
 * Runs the settlement this replica owns (begun, or taken over from a dead owner). `recorded`: a
 * settled payment's `settled` record, written after the answer (see markSettled).
 */
async function run(
  core: Core,
  call: PricedCall,
  scheme: PaymentScheme,
  payment: ParsedPayment,
  id: PaymentRef,
  credentials: readonly Header[],
  reservation: Reservation,
  takenOver: boolean,
  deadline: number,
): Promise<{ outcome: SettleOutcome; recorded?: Promise<void> }> {
  const o = core.opts;
  if (takenOver) {
    o.logger.warn({ scheme: scheme.name }, "took over a settlement whose replica died running it");
  }
  if (reservation.endpoint !== call.endpoint.path || reservation.network !== call.network) {
    await o.reservations.drop(payment.key, id.token, reservation).catch(() => undefined);
    const outcome = await settleRefusal(
      core,
      call,
      "payment_invalid",
      "the payment was verified for another call",
      scheme.protocol,
    );
    return { outcome };
  }

  if (reservation.collected) {
    // The money moved before the call: record it as this call's settlement, collect nothing.
    const receipt = scheme.receiptFor(call, payment, reservation.collected);
    const collection: Collection = { kind: "transaction", transaction: reservation.collected };
    const recorded = markSettled(core, scheme, payment, id.token, collection, receipt);
    o.events.record(reservation, "settled", collection, null);
    return {
      outcome: { settled: true, headers: receipt, meta: scheme.meta(call, payment), collection },
      recorded,
    };
  }

  let result: Awaited<ReturnType<PaymentScheme["settle"]>>;
  try {
    result = await scheme.settle(call, payment, {
      hold: reservation.hold,
      sameCredentials: reservation.credential !== "" && reservation.credential === fingerprint(credentials),
      ...(takenOver ? { takenOver } : {}),
      deadline,
    });
  } catch (err) {
    if (!(err instanceof FacilitatorUnavailableError))
      o.logger.error({ err }, "settlement failed unexpectedly");
    const reason =
      err instanceof FacilitatorUnavailableError ? err.message : "settlement failed unexpectedly";
    result = { ok: false, code: "service_unavailable", reason, transaction: "", receipt: [] };
  }
  if (result.ok) {
    const recorded = markSettled(core, scheme, payment, id.token, result.collection, result.receipt);
    // A refund's ledger row is the settlement worker's, from the chain's `Refunded` log: once.
    const c = result.collection;
    if (c.kind !== "refund") o.events.record(reservation, eventOutcome(c), c, null);
    return {
      outcome: {
        settled: true,
        headers: result.receipt,
        meta: scheme.meta(call, payment),
        collection: result.collection,
      },
      recorded,
    };
  }

  // Nothing was collected (or a broadcast transfer is still pending, which the scheme reconciles
  // when the client retries): forget the reservation; the client was not served and may pay again.
  let dropped: Promise<void> | undefined;
  // Only this begin's record: a takeover by another replica (this one cut off from Redis for more
  // than 2 s looks dead) runs under its own attempt, and a late drop must not delete it. What the
  // scheme may have charged after all is undone only when this drop deleted the record: no
  // takeover can then answer the call served (a failed drop's retry cannot tell, and keeps it).
  const undo = result.undo;
  // A transfer broadcast and not confirmed may still land: its draw keeps counting.
  const broadcast = result.code === "service_unavailable" && result.transaction !== "";
  const drop = async () => {
    const deleted = await o.reservations.drop(payment.key, id.token, reservation, broadcast);
    if (!undo) return;
    if (deleted) {
      void undo().catch((err: unknown) =>
        o.logger.error({ err }, "undoing a failed settlement's charge failed"),
      );
    } else {
      o.logger.warn(
        { scheme: scheme.name },
        "a failed settlement's charge of unknown outcome stays: its payment was taken over, or its drop's answer was lost",
      );
    }
  };
  await drop().catch((err: unknown) => {
    o.logger.warn({ err, scheme: scheme.name }, "could not drop a failed payment's reservation");
    // Until the drop lands the store says `settling` under this replica: a retry of the call here
    // joins this answer (as `recorded` keeps it) instead of taking the record over, which the
    // late drop would then delete under a settlement that is running.
    dropped = new Promise((done) => core.queue.defer(SETTLING_TTL_MS, drop, done));
  });
  const transaction = result.transaction
    ? { kind: "transaction" as const, transaction: result.transaction }
    : null;
  if (result.code === "service_unavailable" && result.transaction)
    chargedForNoData(core, "pending", call, scheme, payment, result.transaction);
  o.events.record(reservation, "failed", transaction, result.reason);
  return { outcome: await settleFailed(core, call, scheme, result), recorded: dropped };
}

/**
 * Records a settled payment (settling → settled), not awaited before Settle's answer: the money
 * already moved, and until this lands the `settling` marker refuses every other use of the
 * payment, a retry of the call here joins core.inFlight, and one on another replica waits for
 * `settled` while we are alive. Resolves (never rejects) once it landed, or once it lapsed with
 * the settling marker when the store stayed unreachable (retried like the other clean-ups).
 */
function markSettled(
  core: Core,
  scheme: PaymentScheme,
  payment: ParsedPayment,
  token: string,
  collection: Collection,
  receipt: Header[],
): Promise<void> {
  const transaction = referenceOf(collection);
  const mark = () =>
    core.opts.reservations.markSettled(
      payment.key,
      token,
      transaction,
      JSON.stringify(receipt),
      scheme.retentionMs(payment),
    );
  return mark().catch((err: unknown) => {
    core.opts.logger.error(
      { err, scheme: scheme.name },
      "could not record a settled payment: retried once the store answers",
    );
    return new Promise<void>((over) => core.queue.defer(SETTLING_TTL_MS, mark, over));
  });
}
