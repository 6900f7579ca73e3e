// Payments their scheme guards itself (SelfGuarded): no reservation and no attempt limits. The
// scheme's own state holds one request at a time and refuses replays, and it admits only payments
// whose signature checked out, so a flood costs the sender a valid key (a voucher on a known
// x402-batch channel; see its scheme). The core still generates the token, remembers final
// refusals and records every outcome as an event.
import { randomUUID } from "node:crypto";
import { mayHaveRun, readBack } from "@tollgate/platform/redis";
import type { Reservation } from "../stores/reservations.ts";
import {
  type Core,
  detect,
  eventOutcome,
  GUARDED,
  type PaymentRef,
  paymentIdOf,
  referenceOf,
  type SettleOutcome,
  type VerifyOutcome,
} from "./context.ts";
import { chargedForNoData, refused, settleFailed, settleRefusal, settleUnavailable } from "./refusals.ts";
import {
  FacilitatorUnavailableError,
  type Header,
  type ParsedPayment,
  type PaymentScheme,
  type PricedCall,
  type SettleResult,
  type Verdict,
} from "./types.ts";

/**
 * How long a Verify whose channel lock may have been taken waits for Redis to let it go before
 * answering: inside the gateway's 10 s Verify deadline (a gateway that gives up sooner answers 503
 * itself; the lock is let go all the same).
 */
const LOST_LOCK_WAIT_MS = 8_000;

/** Admits a self-guarded payment; undefined when `scheme` does not guard it (the reserved path). */
export async function verifyGuarded(
  core: Core,
  call: PricedCall,
  scheme: PaymentScheme,
  payment: ParsedPayment,
  print: string,
): Promise<VerifyOutcome | undefined> {
  if (!scheme.guarded) return undefined;
  const token = `${GUARDED}${randomUUID()}`;
  let verdict: Verdict | undefined;
  try {
    verdict = await scheme.guarded.admit(call, payment, token);
  } catch (err) {
    // The store may have admitted it (the channel's lock taken for this token) and lost the answer:
    // every voucher of the channel would be refused busy until the lock lapses. Let go before
    // answering when the store is back within LOST_LOCK_WAIT_MS (the payer's next call, on any
    // replica, then finds the channel free); otherwise once it answers, under the same cap as a
    // lost reservation.
    const guarded = scheme.guarded;
    const letGo = () => guarded.release(call.requestId, payment, token);
    if (mayHaveRun(err) && !(await readBack(letGo, LOST_LOCK_WAIT_MS))) {
      core.queue.deferLost(core.opts.reservationTtlMs, letGo);
    }
    return { ...guardedUnavailable(core, scheme, err), headers: [], scheme: scheme.name, valid: false };
  }
  if (!verdict) return undefined;
  if (!verdict.ok) return refused(core, call, scheme, verdict, print);
  return {
    valid: true,
    // A Verify retried for the same request finds the payment held under its first token.
    paymentId: paymentIdOf(payment.key, verdict.hold || token),
    payer: payment.payer,
    scheme: scheme.name,
    noService: payment.noService === true,
  };
}

export async function settleGuarded(
  core: Core,
  call: PricedCall,
  scheme: PaymentScheme,
  payment: ParsedPayment,
  id: PaymentRef,
  credentials: readonly Header[],
  deadline: number,
): Promise<SettleOutcome> {
  const token = id.token;
  if (!scheme.guarded) {
    return settleRefusal(core, call, "payment_invalid", "the payment was not verified", scheme.protocol);
  }
  let result: SettleResult;
  try {
    result = await scheme.guarded.commit(call, payment, token);
  } catch (err) {
    // Answered 503, no data, so nothing may stay charged: once the store answers, a commit that
    // landed though its answer was lost is taken back, and a hold it left is let go.
    const guarded = scheme.guarded;
    core.queue.defer(core.opts.reservationTtlMs, async () => {
      if (await guarded.undo(call, payment, token)) {
        core.opts.logger.warn({ scheme: scheme.name }, "a charge whose answer was lost was taken back");
      }
      await releaseGuarded(core, call.requestId, call, id, credentials, "store_unavailable");
    });
    return settleUnavailable(guardedUnavailable(core, scheme, err).reason);
  }
  const record = guardedRecord(call.requestId, call, scheme, payment, token);
  if (!result.ok) {
    core.opts.events.record(record, "failed", null, result.reason);
    return settleFailed(core, call, scheme, result);
  }
  const c = result.collection;
  if (c.kind !== "refund") core.opts.events.record(record, eventOutcome(c), c, null);
  // (The gateway sends a Settle again only when the last one's answer was lost, so a commit
  // answered after the deadline charged a call answered 503. A commit is once per token: two
  // attempts of the call both past the deadline count it twice.)
  if (core.now() > deadline)
    chargedForNoData(core, "collected_late", call, scheme, payment, referenceOf(result.collection));
  return {
    settled: true,
    headers: result.receipt,
    meta: scheme.meta(call, payment),
    collection: result.collection,
  };
}

export async function releaseGuarded(
  core: Core,
  requestId: string,
  call: PricedCall | undefined,
  id: PaymentRef,
  credentials: readonly Header[],
  reason: string,
): Promise<void> {
  const detected = detect(core, credentials);
  if (detected.kind !== "payment" || detected.payment.key !== id.key) return;
  const { scheme, payment } = detected;
  // Throws when the store is unreachable: release() defers it, so the channel is not left busy
  // until its lock's TTL once the store is back.
  const freed = (await scheme.guarded?.release(requestId, payment, id.token)) === true;
  if (!freed) return;
  core.opts.metrics.releases.inc({ scheme: scheme.name });
  core.opts.events.record(
    guardedRecord(requestId, call, scheme, payment, id.token),
    "released",
    null,
    reason || "call_failed",
  );
}

function guardedUnavailable(
  core: Core,
  scheme: PaymentScheme,
  err: unknown,
): { code: "service_unavailable"; reason: string } {
  core.opts.logger.warn(
    { err: err instanceof Error ? err.message : err, scheme: scheme.name },
    "payment store unavailable",
  );
  const reason =
    err instanceof FacilitatorUnavailableError ? err.message : "payment replay protection is unavailable";
  return { code: "service_unavailable", reason };
}

/** What the events record of a self-guarded payment (in the shape of a reservation). */
function guardedRecord(
  requestId: string,
  call: PricedCall | undefined,
  scheme: PaymentScheme,
  payment: ParsedPayment,
  token: string,
): Reservation {
  return {
    state: "reserved",
    token,
    scheme: scheme.name,
    requestId,
    endpoint: call?.endpoint.path ?? "",
    network: call?.network ?? "",
    payer: payment.payer,
    amount: payment.amount,
    asset: payment.asset,
    paymentNetwork: payment.paymentNetwork,
    credential: "",
    collected: "",
    hold: "",
    transaction: "",
    receipt: "",
    owner: "",
    attempt: "",
  };
}
