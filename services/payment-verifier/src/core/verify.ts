// Verify: find the scheme a credential belongs to, limit attempts, reserve the payment at most once
// across replicas under a token only this service generates (with the payer's draws in flight),
// have the scheme verify it, and free the reservation again when it does not pass. A payment its
// scheme guards itself takes the self-guarded path instead.
import { randomUUID } from "node:crypto";
import { mayHaveRun } from "@tollgate/platform/redis";
import type { PaymentFacts, ReservationStore } from "../stores/reservations.ts";
import { claimAnswer, findAnswer } from "./answers.ts";
import {
  type Core,
  type Detected,
  detect,
  fingerprint,
  paymentIdOf,
  SETTLING_TTL_MS,
  StoreUnavailableError,
  store,
  unavailable,
  type VerifyOutcome,
} from "./context.ts";
import { conflict, limited, payable, problemFor, refuse, refused, refuseInvalid } from "./refusals.ts";
import { letGo, release, releaser } from "./release.ts";
import { verifyGuarded } from "./self-guarded.ts";
import {
  FacilitatorUnavailableError,
  type Header,
  type ParsedPayment,
  type PaymentScheme,
  type PricedCall,
} from "./types.ts";

/**
 * The name under which a scheme penalizes a payer (ReservationStore.penalize): that payer's next
 * payments in the scheme are refused at Verify until it lapses.
 */
export function payerPenalty(scheme: string, payer: string): string {
  return `${scheme}:${payer.toLowerCase()}`;
}

export async function verify(
  core: Core,
  call: PricedCall,
  credentials: readonly Header[],
): Promise<VerifyOutcome> {
  const started = performance.now();
  const detected = detect(core, credentials);
  const scheme =
    detected.kind === "payment"
      ? detected.scheme.name
      : detected.kind === "invalid"
        ? detected.scheme
        : "none";
  const outcome = await verifyDetected(core, call, credentials, detected);
  core.opts.metrics.verifySeconds.observe(
    { scheme, outcome: outcome.valid ? "valid" : outcome.answer ? "answered" : outcome.code },
    (performance.now() - started) / 1000,
  );
  return outcome;
}

async function verifyDetected(
  core: Core,
  call: PricedCall,
  credentials: readonly Header[],
  detected: Detected,
): Promise<VerifyOutcome> {
  const o = core.opts;
  if (detected.kind === "absent") {
    const reason = "no payment credential in the request";
    return refuse(
      core,
      call,
      "none",
      "payment_required",
      reason,
      problemFor(core, undefined, "payment_required", reason),
    );
  }
  if (detected.kind === "invalid") {
    const { protocol, reason } = detected;
    // Counted against the client: a flood of undecodable credentials costs its sender a 429.
    const limitedNow = await countClientAttempt(core, call);
    if (limitedNow) return limitedNow;
    return refuse(
      core,
      call,
      detected.scheme,
      "payment_invalid",
      reason,
      protocol.problem?.("payment_invalid", reason),
    );
  }
  const { scheme, payment } = detected;
  if (!payable(call, scheme.name)) {
    // A scheme this product is not sold for (a top-up takes a settled transfer, never a channel's
    // voucher): refused before anything is counted or reserved, with the offers it is sold for.
    const ways = call.endpoint.payWith?.join(", ") ?? "";
    return refuseInvalid(
      core,
      call,
      scheme,
      `${call.endpoint.summary} is paid with ${ways} only, not ${scheme.name}: pay one of the offers of this 402`,
    );
  }
  if (call.noService && !payment.noService) {
    // Refused before anything is counted or reserved: the gateway gives its ordinary answer.
    return {
      valid: false,
      code: "not_applicable",
      reason: "this request names no call to serve, and the payment is for one",
      headers: [],
      scheme: scheme.name,
    };
  }
  // Clean-ups left over from a store outage come first: this call may re-use what they free.
  if (core.queue.pending) await core.queue.drain();
  const now = core.now();
  const print = fingerprint(credentials);
  const remembered = o.refusals.recall(print, now);
  if (remembered !== undefined) {
    o.metrics.refusalsRemembered.inc({ scheme: scheme.name });
    return refuseInvalid(core, call, scheme, remembered);
  }
  if (detected.identified) return verifyIdentified(core, call, credentials, detected, print);
  return verifyPayment(core, call, credentials, scheme, payment, print);
}

/**
 * A payment carrying a payment identifier (core/answers.ts): a retry of its first request is
 * answered from the record (the first answer, or "in progress") before anything is reserved; a
 * first request is verified as any payment, then claims the identifier (409 when another payment
 * or request holds it).
 */
async function verifyIdentified(
  core: Core,
  call: PricedCall,
  credentials: readonly Header[],
  detected: Extract<Detected, { kind: "payment" }>,
  print: string,
): Promise<VerifyOutcome> {
  const { scheme, payment } = detected;
  const identified = detected.identified as NonNullable<typeof detected.identified>;
  const outage = (err: unknown): VerifyOutcome => {
    if (!(err instanceof StoreUnavailableError)) throw err;
    return {
      valid: false,
      code: "service_unavailable",
      reason: err.message,
      headers: [],
      scheme: scheme.name,
    };
  };
  try {
    const found = await findAnswer(core, call, payment.payer, scheme.name, identified);
    if (found) return found;
  } catch (err) {
    return outage(err);
  }
  const outcome = await verifyPayment(core, call, credentials, scheme, payment, print);
  if (!outcome.valid) {
    if (outcome.code !== "payment_invalid") return outcome;
    // Refused as in use or used: a copy of a first request that got there first (a race with the
    // look-up above) is answered from its record; one still in its Verify (reserved, no record
    // yet) is in progress too.
    const found = await findAnswer(core, call, payment.payer, scheme.name, identified).catch(() => undefined);
    if (found) return found;
    const current = await core.opts.reservations.get(payment.key).catch(() => undefined);
    if (current?.state !== "reserved" || current.requestId === call.requestId) return outcome;
    core.opts.metrics.identifiedAnswers.inc({ scheme: scheme.name, outcome: "in_progress" });
    return {
      valid: false,
      code: "identifier_in_progress",
      reason: "the first request with this payment is still being verified: retry in a second for its answer",
      headers: [],
      scheme: scheme.name,
    };
  }
  const free = () =>
    release(core, call.requestId, call, outcome.paymentId, credentials, "identifier_conflict");
  try {
    return await claimAnswer(core, call, payment.payer, identified, outcome, free);
  } catch (err) {
    return outage(err);
  }
}

/** Verifies a payment: its scheme's own road (self-guarded), or reserved, then verified. */
async function verifyPayment(
  core: Core,
  call: PricedCall,
  credentials: readonly Header[],
  scheme: PaymentScheme,
  payment: ParsedPayment,
  print: string,
): Promise<VerifyOutcome> {
  const o = core.opts;
  const now = core.now();
  const guarded = await verifyGuarded(core, call, scheme, payment, print);
  if (guarded) return guarded;
  const facts = factsOf(call, scheme, payment, print);
  try {
    // Whether the payment is its payer's own: only then is it counted against that payer's limit
    // (a forged payment naming a victim must not use up the victim's attempts).
    const checked = await scheme.authenticate?.(call, payment);
    if (checked && !checked.ok) {
      const limitedNow = await countClientAttempt(core, call, scheme.name);
      return limitedNow ?? (await refused(core, call, scheme, checked, print));
    }
    const proven = checked?.proven === true;
    // The reservation comes before the verification, so concurrent copies of one payment cost one;
    // the attempt is counted against the limits in the same round trip.
    const token = randomUUID();
    const attempt = {
      checks: [
        { scope: "client", id: call.client, limit: o.limits.perClient },
        { scope: "payer", id: proven ? payment.payer : "", limit: o.limits.perPayer },
      ],
      nowMs: now,
      // A payer its scheme penalized (payerPenalty) is refused here, in the same round trip.
      penalty: payerPenalty(scheme.name, payment.payer),
    };
    // What its settlement would send from the payer's balance joins the payer's draws in flight.
    const draw = payment.draw
      ? {
          account: `${payment.paymentNetwork}|${payment.asset}|${payment.payer}`,
          amount: payment.draw,
          ttlMs: o.reservationTtlMs + SETTLING_TTL_MS,
        }
      : undefined;
    const reserved = await reserve(core, payment.key, token, facts, attempt, draw);
    if (!reserved.ok && reserved.penalizedMs) {
      const until = new Date(now + reserved.penalizedMs).toISOString();
      const reason = `payments from this payer are refused until ${until}: a payment it signed could not be collected after it was verified (the balance or the authorization was spent meanwhile)`;
      return refuseInvalid(core, call, scheme, reason);
    }
    if (!reserved.ok && reserved.limited) return limited(core, reserved.limited, scheme.name);
    if (!reserved.ok) {
      const answer = await scheme.conflict?.(call, payment).catch(() => undefined);
      if (answer) {
        o.metrics.reservationConflicts.inc({ scheme: scheme.name, operation: "verify" });
        const problem = scheme.protocol.problem?.("payment_invalid", answer.reason);
        return {
          valid: false,
          code: "payment_invalid",
          reason: answer.reason,
          headers: answer.challenge,
          scheme: scheme.name,
          ...(problem ? { problem } : {}),
        };
      }
      return conflict(core, call, scheme, reserved.current, "verify");
    }
    // Whatever stops the verification frees the reservation again (unless a retry holds it).
    const free = () =>
      reserved.retried
        ? undefined
        : o.reservations.release(payment.key, token, call.requestId).catch(() => undefined);
    const verdict = await scheme.verify(call, payment).catch(async (err: unknown) => {
      await free();
      throw err;
    });
    if (!verdict.ok) {
      await free();
      return refused(core, call, scheme, verdict, print);
    }
    // (A retried Verify is its first Verify's, which answered for it.)
    const drawn = reserved.retried || verdict.collected ? undefined : reserved.drawn;
    const known = verdict.balance !== undefined && /^[0-9]{1,78}$/.test(verdict.balance);
    if (drawn !== undefined && !known) o.metrics.balanceUnknown.inc({ scheme: scheme.name });
    if (drawn !== undefined && known) {
      const balance = BigInt(verdict.balance ?? "0");
      if (drawn > balance) {
        // Its settlement would revert for want of balance (gas ours), or another's would.
        o.metrics.overdrawn.inc({ scheme: scheme.name });
        await free();
        if (verdict.hold) await letGo(core, call, scheme, payment, verdict.hold);
        const others = drawn - BigInt(payment.draw ?? "0");
        return refuseInvalid(
          core,
          call,
          scheme,
          `the payer's balance (${balance} atomic units) does not cover this payment (${payment.draw}) with its other payments being settled (${others}); wait for them, or pay from a funded account`,
        );
      }
    }
    if (verdict.collected || verdict.hold) {
      const verified = { collected: verdict.collected?.transaction ?? "", hold: verdict.hold ?? "" };
      await store(core, () => o.reservations.markVerified(payment.key, reserved.token, verified)).catch(
        (err: unknown) => {
          // Refused 503 with the scheme's hold taken: undo both once the store answers.
          const id = { key: payment.key, token: reserved.token };
          core.queue.defer(
            o.reservationTtlMs,
            releaser(core, call.requestId, call, id, credentials, "store_unavailable", verdict.hold),
          );
          throw err;
        },
      );
    }
    return {
      valid: true,
      paymentId: paymentIdOf(payment.key, reserved.token),
      payer: payment.payer,
      scheme: scheme.name,
      noService: payment.noService === true,
    };
  } catch (err) {
    if (err instanceof StoreUnavailableError || err instanceof FacilitatorUnavailableError) {
      return {
        valid: false,
        code: "service_unavailable",
        reason: err.message,
        headers: [],
        scheme: scheme.name,
      };
    }
    throw err;
  }
}

type Reserve = Parameters<ReservationStore["reserve"]>;

/**
 * Reserves `key` for `token`. With no answer the store may have taken it all the same (Redis ran
 * the script, then went away), which would refuse this payment as in use until its TTL: freed,
 * for this token only, once the store answers again. (A retried Verify of the same request would
 * be handed this token; the gateway sends a Verify again only when it got no answer, and this
 * one is answered 503.)
 */
async function reserve(
  core: Core,
  key: string,
  token: string,
  facts: Reserve[2],
  attempt: Reserve[4],
  draw: Reserve[5],
) {
  const o = core.opts;
  try {
    return await o.reservations.reserve(key, token, facts, o.reservationTtlMs, attempt, draw);
  } catch (err) {
    if (mayHaveRun(err)) {
      core.queue.deferLost(o.reservationTtlMs, () => o.reservations.release(key, token, facts.requestId));
    }
    throw unavailable(core, err);
  }
}

/**
 * Counts a refused attempt that reserves nothing against the client's limit: a 429 once it is
 * full. A store that cannot count it does not turn the refusal into an outage: it stands.
 */
async function countClientAttempt(
  core: Core,
  call: PricedCall,
  scheme = "none",
): Promise<VerifyOutcome | undefined> {
  const checks = [{ scope: "client", id: call.client, limit: core.opts.limits.perClient }];
  const scope = await core.opts.reservations
    .countAttempt({ checks, nowMs: core.now() })
    .catch(() => undefined);
  return scope ? limited(core, scope, scheme) : undefined;
}

function factsOf(
  call: PricedCall,
  scheme: PaymentScheme,
  payment: ParsedPayment,
  credential: string,
): PaymentFacts {
  return {
    credential,
    scheme: scheme.name,
    requestId: call.requestId,
    endpoint: call.endpoint.path,
    network: call.network,
    payer: payment.payer,
    amount: payment.amount,
    asset: payment.asset,
    paymentNetwork: payment.paymentNetwork,
    ...(call.account ? { account: call.account } : {}),
  };
}
