// The payment core, the same for every protocol and scheme: find the scheme a credential belongs
// to, limit attempts, reserve the payment at most once across replicas under a token only this
// service generates, verify, then settle after the node answered or release after it did not, and
// record every outcome as an event. It knows nothing of x402 or MPP: protocols decode credentials
// and render offers, schemes check and collect payments. Driven by plain objects (see transport.ts
// for the gRPC mapping); payment problems are answers, never exceptions.
import { createHash, randomUUID } from "node:crypto";
import type { Logger } from "@tollgate/platform";
import { mayHaveRun, readBack } from "@tollgate/platform/redis";
import type { Limit, RefusalMemory } from "../stores/attempt-limits.ts";
import type { PaymentFacts, ReleaseMark, Reservation, ReservationStore } from "../stores/reservations.ts";
import type { SettlementRecorder } from "./events.ts";
import type { PaymentMetrics } from "./metrics.ts";
import {
  type Collection,
  FacilitatorUnavailableError,
  type Header,
  type ParsedPayment,
  type PaymentErrorCode,
  type PaymentMeta,
  type PaymentMethodInfo,
  type PaymentProtocol,
  type PaymentScheme,
  type PricedCall,
  type Problem,
  type SettleResult,
  type Verdict,
} from "./types.ts";

/** A settling payment is held this long if the process dies mid-settlement. */
const SETTLING_TTL_MS = 5 * 60_000;
/** The longest refusal text a 402's offers carry in their headers (see challenge). */
const ERROR_IN_HEADERS_MAX = 300;
/**
 * Liveness of this replica (the owner of the settlements it runs): renewed every HEARTBEAT_MS, it
 * lapses ALIVE_TTL_MS after the process died, and another replica's Settle of a call it was
 * settling then takes the settlement over.
 */
const HEARTBEAT_MS = 500;
const ALIVE_TTL_MS = 2_000;
/** How often a Settle waiting for the same call's settlement under another owner looks again. */
const SETTLE_POLL_MS = 50;
/** A waiting Settle answers this long before its caller's deadline; without a deadline it waits at most SETTLE_WAIT_MAX_MS. */
const DEADLINE_MARGIN_MS = 500;
const SETTLE_WAIT_MAX_MS = 30_000;
/** How often a clean-up that could not reach the store is tried again, and how many wait at most. */
const DEFERRED_RETRY_MS = 500;
const DEFERRED_MAX = 10_000;
/** Of those, releases of reservations and channel locks whose answer was lost (see #reserve). */
const LOST_RESERVES_MAX = 1_000;
/**
 * How long a Verify whose channel lock may have been taken waits for Redis to let it go before
 * answering: inside the gateway's 10 s Verify deadline (a gateway that gives up sooner answers 503
 * itself; the lock is let go all the same).
 */
const LOST_LOCK_WAIT_MS = 8_000;

/** A clean-up the store refused (it was unreachable), tried again until it lands or lapses. */
interface Deferred {
  /** Past this, the reservation it frees has lapsed on its own. */
  until: number;
  run(): Promise<void>;
  /** Told once it is over: landed, lapsed or dropped (the queue was full). */
  over?: () => void;
}
/** Marks the token of a payment its scheme guards itself (SelfGuarded): no reservation holds it. */
const GUARDED = "g-";

export interface PaymentsOptions {
  /** In the order offers are listed; the first scheme of a protocol that claims a credential takes it. */
  schemes: readonly PaymentScheme[];
  /** Also counts payment attempts against `limits` (in the reserve's round trip). */
  reservations: ReservationStore;
  refusals: RefusalMemory;
  limits: { perClient: Limit; perPayer: Limit };
  events: SettlementRecorder;
  metrics: PaymentMetrics;
  logger: Logger;
  reservationTtlMs: number;
  /** This process's replica id, the owner of the settlements it runs (a random one if not given). */
  replica?: string;
  now?: () => number;
}

export type VerifyOutcome =
  | {
      valid: true;
      paymentId: string;
      payer: string;
      scheme: string;
      /** A channel management action: Settle it at once, call no node. */
      noService: boolean;
    }
  | {
      valid: false;
      code: PaymentErrorCode;
      reason: string;
      headers: Header[];
      scheme: string;
      problem?: Problem;
    };

export type SettleOutcome =
  | { settled: true; headers: Header[]; meta: PaymentMeta; collection: Collection }
  | {
      settled: false;
      code: PaymentErrorCode;
      reason: string;
      headers: Header[];
      transaction: string;
      problem?: Problem;
    };

type Detected =
  | { kind: "absent" }
  | { kind: "invalid"; scheme: string; reason: string; protocol: PaymentProtocol }
  | { kind: "payment"; scheme: PaymentScheme; payment: ParsedPayment };

/** The metrics label and event outcome of a collection. */
function outcomeOf(collection: Collection): "settled" | "accrued" | "channel_settled" {
  if (collection.kind === "accrual") return "accrued";
  return collection.kind === "transaction" ? "settled" : "channel_settled";
}

/** What a collection is found by: its transaction, or an accrual's channel when it came with none. */
function referenceOf(collection: Collection): string {
  return collection.kind === "accrual"
    ? (collection.transaction ?? collection.channel)
    : collection.transaction;
}

/** The reservation store could not be reached: refuse rather than risk serving a payment twice. */
class StoreUnavailableError extends Error {}

/**
 * The name under which a scheme penalizes a payer (ReservationStore.penalize): that payer's next
 * payments in the scheme are refused at Verify until it lapses.
 */
export function payerPenalty(scheme: string, payer: string): string {
  return `${scheme}:${payer.toLowerCase()}`;
}

/** `payment_id` = the payment's key and the token that holds its reservation (opaque to callers). */
function paymentIdOf(key: string, token: string): string {
  return `${key}#${token}`;
}

function splitPaymentId(paymentId: string): { key: string; token: string } | undefined {
  const at = paymentId.lastIndexOf("#");
  if (at <= 0 || at === paymentId.length - 1) return undefined;
  return { key: paymentId.slice(0, at), token: paymentId.slice(at + 1) };
}

function fingerprint(credentials: readonly Header[]): string {
  const hash = createHash("sha256");
  for (const h of credentials) hash.update(`${h.name.toLowerCase()}\n${h.value}\n`);
  return hash.digest("base64url");
}

export class Payments {
  readonly #schemes: readonly PaymentScheme[];
  readonly #protocols: readonly { protocol: PaymentProtocol; schemes: PaymentScheme[] }[];
  readonly #o: PaymentsOptions;
  readonly #now: () => number;
  /**
   * Releases of calls that got no answer while the store (Redis) was unreachable. Left undone, the
   * payment stays reserved and a channel scheme's request stays held until their TTLs, so a payer
   * re-signing the same voucher (an x402-batch client that was never charged) is refused for
   * minutes after Redis is back; done first thing once it answers, the next call goes through.
   */
  readonly #deferred: Deferred[] = [];
  #retrying: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  readonly #replica: string;
  #heartbeat: NodeJS.Timeout | undefined;
  /**
   * The settlements this replica runs, by call: a second Settle of one of them joins it. A settled
   * one stays until its `settled` record has landed in the store (answered before, not awaited).
   */
  readonly #inFlight = new Map<string, Promise<SettleOutcome>>();
  /** Begins sent by this process, for their attempt ids. */
  #attempts = 0;
  /** Lost-answer releases (reservations, channel locks) waiting in #deferred. */
  #lostReserves = 0;
  /** Calls whose Settle here is between its first begin and its answer being in #inFlight. */
  readonly #beginning = new Set<string>();

  constructor(opts: PaymentsOptions) {
    this.#o = opts;
    this.#schemes = opts.schemes;
    this.#now = opts.now ?? Date.now;
    this.#replica = opts.replica ?? randomUUID();
    const byProtocol = new Map<PaymentProtocol, PaymentScheme[]>();
    for (const scheme of opts.schemes) {
      const list = byProtocol.get(scheme.protocol) ?? [];
      list.push(scheme);
      byProtocol.set(scheme.protocol, list);
    }
    this.#protocols = [...byProtocol].map(([protocol, schemes]) => ({ protocol, schemes }));
  }

  /**
   * Marks this replica alive (awaited once, so no Settle of ours begins unowned), then renews it
   * from one interval. An unreachable store is tried again on the next beat: if it stays away past
   * ALIVE_TTL_MS, another replica may take our settlements over once it answers again, and the
   * schemes' settlements are idempotent for that.
   */
  async start(): Promise<void> {
    let failing = false; // logged once per outage, not on every beat
    const beat = () =>
      this.#o.reservations.heartbeat(this.#replica, ALIVE_TTL_MS).then(
        () => {
          failing = false;
        },
        (err: unknown) => {
          if (failing) return;
          failing = true;
          this.#o.logger.warn(
            { err: err instanceof Error ? err.message : err },
            "could not renew this replica's liveness",
          );
        },
      );
    await beat();
    this.#heartbeat ??= setInterval(() => void beat(), HEARTBEAT_MS).unref();
  }

  /** Stops the liveness beat (the process is going away). */
  close(): void {
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  /**
   * Every protocol's one rendering of its schemes' offers. A scheme that cannot take payments now
   * drops out alone; the 402 still answers with the others.
   */
  async challenge(call: PricedCall, refusal = ""): Promise<Header[]> {
    // The offers' headers repeat the refusal, which may quote what the client sent (a schema
    // message naming an unknown key): bounded, so the 402 stays under the 16 KB of headers HTTP
    // clients read. The answer's body keeps the whole of it.
    const error =
      refusal.length > ERROR_IN_HEADERS_MAX ? `${refusal.slice(0, ERROR_IN_HEADERS_MAX - 1)}…` : refusal;
    const rendered = await Promise.all(
      this.#protocols.map(async ({ protocol, schemes }) => {
        const offers = await Promise.allSettled(schemes.map((s) => s.offers(call, error)));
        const up = offers.flatMap((o, i) => {
          if (o.status === "fulfilled") return o.value;
          const scheme = schemes[i]?.name;
          const reason = o.reason instanceof Error ? o.reason.message : String(o.reason);
          this.#o.logger.warn(
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

  /**
   * The problem a protocol defines for a refusal: the credential's protocol, or (no credential)
   * the first protocol that defines one, since the 402 offers every protocol.
   */
  problem(
    protocol: PaymentProtocol | undefined,
    code: PaymentErrorCode,
    reason: string,
  ): Problem | undefined {
    if (protocol) return protocol.problem?.(code, reason);
    for (const p of this.#protocols) {
      const problem = p.protocol.problem?.(code, reason);
      if (problem) return problem;
    }
    return undefined;
  }

  async verify(call: PricedCall, credentials: readonly Header[]): Promise<VerifyOutcome> {
    const started = performance.now();
    const detected = this.#detect(credentials);
    const scheme =
      detected.kind === "payment"
        ? detected.scheme.name
        : detected.kind === "invalid"
          ? detected.scheme
          : "none";
    const outcome = await this.#verify(call, credentials, detected);
    this.#o.metrics.verifySeconds.observe(
      { scheme, outcome: outcome.valid ? "valid" : outcome.code },
      (performance.now() - started) / 1000,
    );
    return outcome;
  }

  async #verify(
    call: PricedCall,
    credentials: readonly Header[],
    detected: Detected,
  ): Promise<VerifyOutcome> {
    if (detected.kind === "absent") {
      const reason = "no payment credential in the request";
      return this.#refuse(
        call,
        "none",
        "payment_required",
        reason,
        this.problem(undefined, "payment_required", reason),
      );
    }
    if (detected.kind === "invalid") {
      const { protocol, reason } = detected;
      // Counted against the client: a flood of undecodable credentials costs its sender a 429.
      const limited = await this.#countClientAttempt(call);
      if (limited) return limited;
      return this.#refuse(
        call,
        detected.scheme,
        "payment_invalid",
        reason,
        protocol.problem?.("payment_invalid", reason),
      );
    }
    const { scheme, payment } = detected;
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
    if (this.#deferred.length > 0) await this.#retryDeferred();
    const now = this.#now();
    const print = fingerprint(credentials);
    const remembered = this.#o.refusals.recall(print, now);
    if (remembered !== undefined) {
      this.#o.metrics.refusalsRemembered.inc({ scheme: scheme.name });
      return this.#refuseInvalid(call, scheme, remembered);
    }
    const guarded = await this.#verifyGuarded(call, scheme, payment, print);
    if (guarded) return guarded;
    const facts = this.#facts(call, scheme, payment, print);
    try {
      // Whether the payment is its payer's own: only then is it counted against that payer's limit
      // (a forged payment naming a victim must not use up the victim's attempts).
      const checked = await scheme.authenticate?.(call, payment);
      if (checked && !checked.ok) {
        const limited = await this.#countClientAttempt(call, scheme.name);
        return limited ?? (await this.#refused(call, scheme, checked, print));
      }
      const proven = checked?.proven === true;
      // The reservation comes before the verification, so concurrent copies of one payment cost one;
      // the attempt is counted against the limits in the same round trip.
      const token = randomUUID();
      const attempt = {
        checks: [
          { scope: "client", id: call.client, limit: this.#o.limits.perClient },
          { scope: "payer", id: proven ? payment.payer : "", limit: this.#o.limits.perPayer },
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
            ttlMs: this.#o.reservationTtlMs + SETTLING_TTL_MS,
          }
        : undefined;
      const reserved = await this.#reserve(payment.key, token, facts, attempt, draw);
      if (!reserved.ok && reserved.penalizedMs) {
        const until = new Date(now + reserved.penalizedMs).toISOString();
        const reason = `payments from this payer are refused until ${until}: a payment it signed could not be collected after it was verified (the balance or the authorization was spent meanwhile)`;
        return this.#refuseInvalid(call, scheme, reason);
      }
      if (!reserved.ok && reserved.limited) return this.#limited(reserved.limited, scheme.name);
      if (!reserved.ok) {
        const answer = await scheme.conflict?.(call, payment).catch(() => undefined);
        if (answer) {
          this.#o.metrics.reservationConflicts.inc({ scheme: scheme.name, operation: "verify" });
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
        return this.#conflict(call, scheme, reserved.current, "verify");
      }
      // Whatever stops the verification frees the reservation again (unless a retry holds it).
      const free = () =>
        reserved.retried
          ? undefined
          : this.#o.reservations.release(payment.key, token, call.requestId).catch(() => undefined);
      const verdict = await scheme.verify(call, payment).catch(async (err: unknown) => {
        await free();
        throw err;
      });
      if (!verdict.ok) {
        await free();
        return this.#refused(call, scheme, verdict, print);
      }
      // (A retried Verify is its first Verify's, which answered for it.)
      const drawn = reserved.retried || verdict.collected ? undefined : reserved.drawn;
      const known = verdict.balance !== undefined && /^[0-9]{1,78}$/.test(verdict.balance);
      if (drawn !== undefined && !known) this.#o.metrics.balanceUnknown.inc({ scheme: scheme.name });
      if (drawn !== undefined && known) {
        const balance = BigInt(verdict.balance ?? "0");
        if (drawn > balance) {
          // Its settlement would revert for want of balance (gas ours), or another's would.
          this.#o.metrics.overdrawn.inc({ scheme: scheme.name });
          await free();
          if (verdict.hold) await this.#letGo(call, scheme, payment, verdict.hold);
          const others = drawn - BigInt(payment.draw ?? "0");
          return this.#refuseInvalid(
            call,
            scheme,
            `the payer's balance (${balance} atomic units) does not cover this payment (${payment.draw}) with its other payments being settled (${others}); wait for them, or pay from a funded account`,
          );
        }
      }
      if (verdict.collected || verdict.hold) {
        const verified = { collected: verdict.collected?.transaction ?? "", hold: verdict.hold ?? "" };
        await this.#store(() =>
          this.#o.reservations.markVerified(payment.key, reserved.token, verified),
        ).catch((err: unknown) => {
          // Refused 503 with the scheme's hold taken: undo both once the store answers.
          const id = { key: payment.key, token: reserved.token };
          this.#defer(
            this.#o.reservationTtlMs,
            this.#releaser(call.requestId, call, id, credentials, "store_unavailable", verdict.hold),
          );
          throw err;
        });
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

  /** `deadline`: when the caller stops waiting for the answer (epoch ms), if it said. */
  async settle(
    call: PricedCall,
    paymentId: string,
    credentials: readonly Header[],
    deadline = Number.POSITIVE_INFINITY,
  ): Promise<SettleOutcome> {
    const started = performance.now();
    const detected = this.#detect(credentials);
    const scheme = detected.kind === "payment" ? detected.scheme.name : "none";
    const outcome = await this.#settle(call, paymentId, detected, credentials, deadline);
    const label = outcome.settled ? outcomeOf(outcome.collection) : outcome.code;
    this.#o.metrics.settleSeconds.observe({ scheme, outcome: label }, (performance.now() - started) / 1000);
    return outcome;
  }

  async #settle(
    call: PricedCall,
    paymentId: string,
    detected: Detected,
    credentials: readonly Header[],
    deadline: number,
  ): Promise<SettleOutcome> {
    const id = splitPaymentId(paymentId);
    if (detected.kind !== "payment" || !id || id.key !== detected.payment.key) {
      return this.#settleRefusal(
        call,
        "payment_invalid",
        "the credentials are not the payment verified as payment_id",
        detected.kind === "invalid" ? detected.protocol : undefined,
      );
    }
    const { scheme, payment } = detected;
    if (id.token.startsWith(GUARDED))
      return this.#settleGuarded(call, scheme, payment, id, credentials, deadline);
    // One Settle of a call at a time: a second one here joins the first (no store round trip).
    const callKey = `${paymentId}\n${call.requestId}`;
    const joined = this.#inFlight.get(callKey);
    if (joined) return joined;
    let begun: Awaited<ReturnType<ReservationStore["beginSettle"]>>;
    // The id of the latest begin sent: should its answer be lost, what it began is abandoned.
    let attempt = this.#attemptId();
    try {
      begun = await this.#begin(callKey, payment.key, id.token, call.requestId, attempt);
      // The same call settling under a live owner (a retry while the first Settle still runs, here
      // or on another replica): wait for its outcome, or take it over once the owner died.
      const waitUntil = Math.min(deadline - DEADLINE_MARGIN_MS, this.#now() + SETTLE_WAIT_MAX_MS);
      while (!begun.ok && begun.busy) {
        const here = this.#inFlight.get(callKey);
        if (here) return here;
        if (this.#now() >= waitUntil) {
          this.#chargedForNoData("still_settling", call, scheme, payment);
          return this.#settleUnavailable(
            "the payment is still being settled by another Settle of this call; retry",
          );
        }
        await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
        attempt = this.#attemptId();
        begun = await this.#begin(callKey, payment.key, id.token, call.requestId, attempt);
        // Gone while we waited: the first Settle moved nothing and freed the payment.
        if (!begun.ok && !begun.busy && !begun.current) {
          return this.#settleUnavailable(
            "the payment's settlement by another Settle of this call moved nothing; retry",
          );
        }
      }
    } catch (err) {
      // Answered 503, no data: what Verify reserved is freed once the store answers again, and so
      // is what a begin whose answer was lost made `settling` (it ran nothing), unless a later
      // begin or a takeover has it by then (its own attempt id).
      // (A takeover's record is never abandoned: what it took over may have moved money. A retry of
      // the call after the abandon finds the payment gone: answered failed, nothing charged.)
      const lost = attempt;
      const release = this.#releaser(call.requestId, call, id, credentials, "store_unavailable");
      this.#defer(SETTLING_TTL_MS, async () => {
        await release();
        const freed = await this.#o.reservations.abandon(id.key, id.token, this.#replica, lost);
        if (freed) await this.#undo(freed, call, id, credentials, "store_unavailable");
      });
      return this.#settleUnavailable((err as Error).message);
    }
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
      this.#o.metrics.reservationConflicts.inc({ scheme: scheme.name, operation: "settle" });
      return this.#settleRefusal(call, "payment_invalid", conflictReason(current), scheme.protocol);
    }
    const running = this.#run(call, scheme, payment, id, credentials, begun.reservation, begun.takenOver);
    const answer = running.then((r) => r.outcome);
    this.#inFlight.set(callKey, answer);
    let recorded: Promise<void> | undefined;
    try {
      const ran = await running;
      recorded = ran.recorded;
      if (ran.outcome.settled && this.#now() > deadline)
        this.#chargedForNoData("collected_late", call, scheme, payment, referenceOf(ran.outcome.collection));
      return ran.outcome;
    } finally {
      // Until the store says `settled`, a retry of this call here joins the answer given: the
      // store still says `settling` under our (live) ownership, which would only make it wait.
      const forget = () => {
        if (this.#inFlight.get(callKey) === answer) this.#inFlight.delete(callKey);
      };
      if (recorded) void recorded.then(forget);
      else forget();
    }
  }

  /**
   * A call answered failed (the gateway answers 503, no data) while its payer paid, or may yet pay:
   * `collected_late`, its settlement collected after the caller's deadline (the one the gateway
   * sent: it has answered by then); `still_settling`, another Settle of the call still at it when
   * this one had to answer; `pending`, a transfer broadcast and not confirmed in time (a retry
   * with the same payment is served by it, if the client retries). Nothing here can move money
   * back (the payee's key is not ours): counted and logged at error level with the mesh's request
   * id and the reference (transaction or channel), for a refund by hand (README, Runbook). One call
   * can be logged twice (a Settle that answered `still_settling`, then its owner `collected_late`).
   */
  #chargedForNoData(
    what: "collected_late" | "still_settling" | "pending",
    call: PricedCall,
    scheme: PaymentScheme,
    payment: ParsedPayment,
    reference = "",
  ): void {
    const counter = what === "collected_late" ? "settledAfterDeadline" : "settleOutcomeUnknown";
    this.#o.metrics[counter].inc({ scheme: scheme.name });
    this.#o.logger.error(
      {
        scheme: scheme.name,
        what,
        requestId: call.requestId,
        payer: payment.payer,
        endpoint: call.endpoint.path,
        reference,
      },
      what === "collected_late"
        ? "a payment settled after its caller stopped waiting: the call was answered 503 and the payer paid for it (refund it: README, Runbook)"
        : "a Settle answered 503 while its payment may still collect: the ledger shows whether the payer paid for it (README, Runbook)",
    );
  }

  /**
   * Reserves `key` for `token`. With no answer the store may have taken it all the same (Redis ran
   * the script, then went away), which would refuse this payment as in use until its TTL: freed,
   * for this token only, once the store answers again. (A retried Verify of the same request would
   * be handed this token; the gateway sends a Verify again only when it got no answer, and this
   * one is answered 503.)
   */
  async #reserve(
    key: string,
    token: string,
    facts: Parameters<ReservationStore["reserve"]>[2],
    attempt: Parameters<ReservationStore["reserve"]>[4],
    draw: Parameters<ReservationStore["reserve"]>[5],
  ) {
    try {
      return await this.#o.reservations.reserve(key, token, facts, this.#o.reservationTtlMs, attempt, draw);
    } catch (err) {
      // At most LOST_RESERVES_MAX of these wait at a time (a hung Redis times every Verify out):
      // the rest lapse with their TTL, and the clean-ups that matter more keep their place.
      if (mayHaveRun(err) && this.#lostReserves < LOST_RESERVES_MAX) {
        this.#lostReserves++;
        this.#defer(
          this.#o.reservationTtlMs,
          () => this.#o.reservations.release(key, token, facts.requestId),
          () => this.#lostReserves--,
        );
      }
      throw this.#unavailable(err);
    }
  }

  /**
   * Counts a refused attempt that reserves nothing against the client's limit: a 429 once it is
   * full. A store that cannot count it does not turn the refusal into an outage: it stands.
   */
  async #countClientAttempt(call: PricedCall, scheme = "none"): Promise<VerifyOutcome | undefined> {
    const checks = [{ scope: "client", id: call.client, limit: this.#o.limits.perClient }];
    const limited = await this.#o.reservations
      .countAttempt({ checks, nowMs: this.#now() })
      .catch(() => undefined);
    return limited ? this.#limited(limited, scheme) : undefined;
  }

  /** The 429 of an attempt limit (`scope`: client or payer). */
  #limited(scope: string, scheme: string): VerifyOutcome {
    this.#o.metrics.attemptsLimited.inc({ scope });
    return {
      valid: false,
      code: "rate_limited",
      reason: `too many payment attempts from this ${scope}; back off briefly (Retry-After: 1) and retry`,
      headers: [],
      scheme,
    };
  }

  /**
   * Has `scheme` let go of what it holds for a payment that will not be settled; a scheme that
   * cannot now is asked again once it can (deferred).
   */
  async #letGo(call: PricedCall, scheme: PaymentScheme, payment: ParsedPayment, hold: string): Promise<void> {
    const undo = scheme.release?.bind(scheme);
    if (!undo) return;
    await undo(call, payment, hold).catch((err: unknown) => {
      this.#o.logger.warn(
        { err, scheme: scheme.name },
        "scheme could not undo its hold on a payment that will not be settled",
      );
      this.#defer(this.#o.reservationTtlMs, () => undo(call, payment, hold));
    });
  }

  #attemptId(): string {
    return `${this.#replica}:${++this.#attempts}`;
  }

  /**
   * Begins the Settle of the call `callKey`. When nothing of that call runs here (no Settle in
   * flight, none beginning), a `settling` record of ours for it is an orphan (its settlement ended
   * and its `settled` record was lost with the store, or a begin here lost its answer): taken over
   * at once, not waited on until the deadline; the schemes' takeovers find what was sent. One begin
   * of a call claims that at a time (#beginning), or two could take it over.
   */
  async #begin(callKey: string, key: string, token: string, requestId: string, attempt: string) {
    const idle = !this.#beginning.has(callKey) && !this.#inFlight.has(callKey);
    if (idle) this.#beginning.add(callKey);
    try {
      return await this.#store(() =>
        this.#o.reservations.beginSettle(
          key,
          token,
          requestId,
          SETTLING_TTL_MS,
          this.#replica,
          idle,
          attempt,
        ),
      );
    } finally {
      if (idle) this.#beginning.delete(callKey);
    }
  }

  /**
   * Runs the settlement this replica owns (begun, or taken over from a dead owner). `recorded`: a
   * settled payment's `settled` record, written after the answer (see #markSettled).
   */
  async #run(
    call: PricedCall,
    scheme: PaymentScheme,
    payment: ParsedPayment,
    id: { key: string; token: string },
    credentials: readonly Header[],
    reservation: Reservation,
    takenOver: boolean,
  ): Promise<{ outcome: SettleOutcome; recorded?: Promise<void> }> {
    if (takenOver) {
      this.#o.logger.warn({ scheme: scheme.name }, "took over a settlement whose replica died running it");
    }
    if (reservation.endpoint !== call.endpoint.path || reservation.network !== call.network) {
      await this.#o.reservations.drop(payment.key, id.token, reservation).catch(() => undefined);
      const outcome = await this.#settleRefusal(
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
      const recorded = this.#markSettled(scheme, payment, id.token, collection, receipt);
      this.#o.events.record(reservation, "settled", collection, null);
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
      });
    } catch (err) {
      if (!(err instanceof FacilitatorUnavailableError))
        this.#o.logger.error({ err }, "settlement failed unexpectedly");
      const reason =
        err instanceof FacilitatorUnavailableError ? err.message : "settlement failed unexpectedly";
      result = { ok: false, code: "service_unavailable", reason, transaction: "", receipt: [] };
    }
    if (result.ok) {
      const recorded = this.#markSettled(scheme, payment, id.token, result.collection, result.receipt);
      this.#o.events.record(reservation, outcomeOf(result.collection), result.collection, null);
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
      const deleted = await this.#o.reservations.drop(payment.key, id.token, reservation, broadcast);
      if (!undo) return;
      if (deleted) {
        void undo().catch((err: unknown) =>
          this.#o.logger.error({ err }, "undoing a failed settlement's charge failed"),
        );
      } else {
        this.#o.logger.warn(
          { scheme: scheme.name },
          "a failed settlement's charge of unknown outcome stays: its payment was taken over, or its drop's answer was lost",
        );
      }
    };
    await drop().catch((err: unknown) => {
      this.#o.logger.warn({ err, scheme: scheme.name }, "could not drop a failed payment's reservation");
      // Until the drop lands the store says `settling` under this replica: a retry of the call here
      // joins this answer (as `recorded` keeps it) instead of taking the record over, which the
      // late drop would then delete under a settlement that is running.
      dropped = new Promise((done) => this.#defer(SETTLING_TTL_MS, drop, done));
    });
    const transaction = result.transaction
      ? { kind: "transaction" as const, transaction: result.transaction }
      : null;
    if (result.code === "service_unavailable" && result.transaction)
      this.#chargedForNoData("pending", call, scheme, payment, result.transaction);
    this.#o.events.record(reservation, "failed", transaction, result.reason);
    return { outcome: await this.#settleFailed(call, scheme, result), recorded: dropped };
  }

  async #settleFailed(
    call: PricedCall,
    scheme: PaymentScheme,
    result: Extract<SettleResult, { ok: false }>,
  ): Promise<SettleOutcome> {
    const offer =
      result.code === "service_unavailable" ? [] : await this.#challengeOrNone(call, result.reason);
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

  /**
   * Records a settled payment (settling → settled), not awaited before Settle's answer: the money
   * already moved, and until this lands the `settling` marker refuses every other use of the
   * payment, a retry of the call here joins #inFlight, and one on another replica waits for
   * `settled` while we are alive. Resolves (never rejects) once it landed, or once it lapsed with
   * the settling marker when the store stayed unreachable (retried like the other clean-ups).
   */
  #markSettled(
    scheme: PaymentScheme,
    payment: ParsedPayment,
    token: string,
    collection: Collection,
    receipt: Header[],
  ): Promise<void> {
    const transaction = referenceOf(collection);
    const mark = () =>
      this.#o.reservations.markSettled(
        payment.key,
        token,
        transaction,
        JSON.stringify(receipt),
        scheme.retentionMs(payment),
      );
    return mark().catch((err: unknown) => {
      this.#o.logger.error(
        { err, scheme: scheme.name },
        "could not record a settled payment: retried once the store answers",
      );
      return new Promise<void>((over) => this.#defer(SETTLING_TTL_MS, mark, over));
    });
  }

  /** Frees a verified payment whose call got no answer. Only the holder of the token can. */
  async release(
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
    const release = this.#releaser(requestId, call, id, credentials, reason);
    await release().catch((err: unknown) => {
      this.#o.logger.warn({ err }, "could not release a payment reservation: retried once the store answers");
      this.#defer(this.#o.reservationTtlMs, release);
    });
  }

  /**
   * A release of reservation `id` (see #release) under one mesh-made release id, to run until it
   * answers; once it has, running it again does nothing (a deferred job that runs it may be retried
   * for another of its steps, and the scheme's undo must run once).
   */
  #releaser(
    requestId: string,
    call: PricedCall | undefined,
    id: { key: string; token: string },
    credentials: readonly Header[],
    reason: string,
    hold?: string,
  ): () => Promise<void> {
    // Remembered past every deferral that may run it (a reservation's TTL, a settlement's).
    const keepMs = Math.max(this.#o.reservationTtlMs, SETTLING_TTL_MS) + 60_000;
    const mark = { id: this.#attemptId(), keepMs };
    let answered = false;
    return async () => {
      if (answered) return;
      await this.#release(requestId, call, id, credentials, reason, hold, mark);
      answered = true;
    };
  }

  /** The release itself; throws when the store is unreachable (the caller defers it). */
  async #release(
    requestId: string,
    call: PricedCall | undefined,
    id: { key: string; token: string },
    credentials: readonly Header[],
    reason: string,
    hold?: string,
    mark?: ReleaseMark,
  ): Promise<void> {
    if (id.token.startsWith(GUARDED)) return this.#releaseGuarded(requestId, call, id, credentials, reason);
    const freed = await this.#o.reservations.release(id.key, id.token, requestId, mark);
    if (freed) await this.#undo(freed, call, id, credentials, reason, hold);
  }

  /** Records a freed reservation as released and has its scheme undo what it held for it. */
  async #undo(
    freed: Reservation,
    call: PricedCall | undefined,
    id: { key: string; token: string },
    credentials: readonly Header[],
    reason: string,
    hold?: string,
  ): Promise<void> {
    this.#o.metrics.releases.inc({ scheme: freed.scheme });
    this.#o.events.record(freed, "released", null, reason || "call_failed");
    const detected = this.#detect(credentials);
    if (!call || detected.kind !== "payment" || detected.payment.key !== id.key) return;
    await this.#letGo(call, detected.scheme, detected.payment, hold || freed.hold);
  }

  #defer(ttlMs: number, run: () => Promise<unknown>, over?: () => void): void {
    if (this.#deferred.length >= DEFERRED_MAX) this.#deferred.shift()?.over?.();
    this.#deferred.push({ until: this.#now() + ttlMs, run: async () => void (await run()), over });
    this.#retryTimer ??= setInterval(() => void this.#retryDeferred(), DEFERRED_RETRY_MS).unref();
  }

  /** Runs the deferred clean-ups once (coalesced); those the store still refuses wait again. */
  #retryDeferred(): Promise<void> {
    this.#retrying ??= (async () => {
      const due = this.#deferred.splice(0);
      for (const [i, d] of due.entries()) {
        if (d.until <= this.#now()) {
          d.over?.();
          continue;
        }
        try {
          await d.run();
          d.over?.();
        } catch {
          // Still unreachable: keep this one and the rest for the next round.
          this.#deferred.unshift(...due.slice(i));
          break;
        }
      }
      if (this.#deferred.length === 0) {
        clearInterval(this.#retryTimer);
        this.#retryTimer = undefined;
      }
    })().finally(() => {
      this.#retrying = undefined;
    });
    return this.#retrying;
  }

  methods(): PaymentMethodInfo[] {
    return this.#schemes.flatMap((s) => s.methods());
  }

  // ---- payments their scheme guards itself (SelfGuarded) ----
  //
  // No reservation and no attempt limits: the scheme's own state holds one request at a time and
  // refuses replays, and it admits only payments whose signature checked out, so a flood costs the
  // sender a valid key (a voucher on a known x402-batch channel; see its scheme). The core still
  // generates the token, remembers final refusals and records every outcome as an event.

  async #verifyGuarded(
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
        if (this.#lostReserves < LOST_RESERVES_MAX) {
          this.#lostReserves++;
          this.#defer(this.#o.reservationTtlMs, letGo, () => this.#lostReserves--);
        }
      }
      return { ...this.#guardedUnavailable(scheme, err), headers: [], scheme: scheme.name, valid: false };
    }
    if (!verdict) return undefined;
    if (!verdict.ok) return this.#refused(call, scheme, verdict, print);
    return {
      valid: true,
      // A Verify retried for the same request finds the payment held under its first token.
      paymentId: paymentIdOf(payment.key, verdict.hold || token),
      payer: payment.payer,
      scheme: scheme.name,
      noService: payment.noService === true,
    };
  }

  async #settleGuarded(
    call: PricedCall,
    scheme: PaymentScheme,
    payment: ParsedPayment,
    id: { key: string; token: string },
    credentials: readonly Header[],
    deadline: number,
  ): Promise<SettleOutcome> {
    const token = id.token;
    if (!scheme.guarded) {
      return this.#settleRefusal(call, "payment_invalid", "the payment was not verified", scheme.protocol);
    }
    let result: SettleResult;
    try {
      result = await scheme.guarded.commit(call, payment, token);
    } catch (err) {
      // Answered 503, no data, so nothing may stay charged: once the store answers, a commit that
      // landed though its answer was lost is taken back, and a hold it left is let go.
      const guarded = scheme.guarded;
      this.#defer(this.#o.reservationTtlMs, async () => {
        if (await guarded.undo(call, payment, token)) {
          this.#o.logger.warn({ scheme: scheme.name }, "a charge whose answer was lost was taken back");
        }
        await this.#releaseGuarded(call.requestId, call, id, credentials, "store_unavailable");
      });
      return this.#settleUnavailable(this.#guardedUnavailable(scheme, err).reason);
    }
    const record = guardedRecord(call.requestId, call, scheme, payment, token);
    if (!result.ok) {
      this.#o.events.record(record, "failed", null, result.reason);
      return this.#settleFailed(call, scheme, result);
    }
    this.#o.events.record(record, outcomeOf(result.collection), result.collection, null);
    // (The gateway sends a Settle again only when the last one's answer was lost, so a commit
    // answered after the deadline charged a call answered 503. A commit is once per token: two
    // attempts of the call both past the deadline count it twice.)
    if (this.#now() > deadline)
      this.#chargedForNoData("collected_late", call, scheme, payment, referenceOf(result.collection));
    return {
      settled: true,
      headers: result.receipt,
      meta: scheme.meta(call, payment),
      collection: result.collection,
    };
  }

  async #releaseGuarded(
    requestId: string,
    call: PricedCall | undefined,
    id: { key: string; token: string },
    credentials: readonly Header[],
    reason: string,
  ): Promise<void> {
    const detected = this.#detect(credentials);
    if (detected.kind !== "payment" || detected.payment.key !== id.key) return;
    const { scheme, payment } = detected;
    // Throws when the store is unreachable: release() defers it, so the channel is not left busy
    // until its lock's TTL once the store is back.
    const freed = (await scheme.guarded?.release(requestId, payment, id.token)) === true;
    if (!freed) return;
    this.#o.metrics.releases.inc({ scheme: scheme.name });
    this.#o.events.record(
      guardedRecord(requestId, call, scheme, payment, id.token),
      "released",
      null,
      reason || "call_failed",
    );
  }

  #guardedUnavailable(scheme: PaymentScheme, err: unknown): { code: "service_unavailable"; reason: string } {
    this.#o.logger.warn(
      { err: err instanceof Error ? err.message : err, scheme: scheme.name },
      "payment store unavailable",
    );
    const reason =
      err instanceof FacilitatorUnavailableError ? err.message : "payment replay protection is unavailable";
    return { code: "service_unavailable", reason };
  }

  // ---- helpers ----

  #detect(credentials: readonly Header[]): Detected {
    for (const { protocol, schemes } of this.#protocols) {
      const decoded = protocol.decode(credentials);
      if (decoded.kind === "absent") continue;
      if (decoded.kind === "invalid")
        return { kind: "invalid", scheme: protocol.name, reason: decoded.reason, protocol };
      for (const scheme of schemes) {
        const claim = scheme.claim(decoded.credential);
        if (claim.kind === "invalid")
          return { kind: "invalid", scheme: scheme.name, reason: claim.reason, protocol };
        if (claim.kind === "payment") return { kind: "payment", scheme, payment: claim.payment };
      }
      const offered = schemes.map((s) => s.name).join(", ");
      return {
        kind: "invalid",
        scheme: protocol.name,
        reason: `this ${protocol.name} payment is for a scheme not offered here; offered: ${offered}`,
        protocol,
      };
    }
    return { kind: "absent" };
  }

  #facts(call: PricedCall, scheme: PaymentScheme, payment: ParsedPayment, credential: string): PaymentFacts {
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
    };
  }

  async #store<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      throw this.#unavailable(err);
    }
  }

  #unavailable(err: unknown): StoreUnavailableError {
    this.#o.logger.warn({ err: err instanceof Error ? err.message : err }, "payment store unavailable");
    return new StoreUnavailableError("payment replay protection is unavailable");
  }

  async #challengeOrNone(call: PricedCall, error: string): Promise<Header[]> {
    try {
      return await this.challenge(call, error);
    } catch {
      return []; // no offer can be built now: the refusal itself still stands
    }
  }

  /** A scheme's refusal: its own answer headers (a corrective offer), or the 402's. */
  async #refused(
    call: PricedCall,
    scheme: PaymentScheme,
    verdict: Extract<Verdict, { ok: false }>,
    print: string,
  ): Promise<VerifyOutcome> {
    if (verdict.final) this.#o.refusals.remember(print, verdict.reason, this.#now());
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
    return this.#refuse(call, scheme.name, verdict.code, verdict.reason, problem);
  }

  async #refuse(
    call: PricedCall,
    scheme: string,
    code: PaymentErrorCode,
    reason: string,
    problem?: Problem,
  ): Promise<VerifyOutcome> {
    const headers = code === "service_unavailable" ? [] : await this.#challengeOrNone(call, reason);
    return { valid: false, code, reason, headers, scheme, ...(problem ? { problem } : {}) };
  }

  async #conflict(
    call: PricedCall,
    scheme: PaymentScheme,
    current: Reservation | undefined,
    operation: string,
  ): Promise<VerifyOutcome> {
    this.#o.metrics.reservationConflicts.inc({ scheme: scheme.name, operation });
    const reason = conflictReason(current);
    return this.#refuseInvalid(call, scheme, reason);
  }

  /** `payment_invalid` for `scheme`'s payment, in its protocol's problem shape. */
  #refuseInvalid(call: PricedCall, scheme: PaymentScheme, reason: string): Promise<VerifyOutcome> {
    return this.#refuse(
      call,
      scheme.name,
      "payment_invalid",
      reason,
      scheme.protocol.problem?.("payment_invalid", reason),
    );
  }

  #settleUnavailable(reason: string): SettleOutcome {
    return { settled: false, code: "service_unavailable", reason, headers: [], transaction: "" };
  }

  async #settleRefusal(
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
      headers: await this.#challengeOrNone(call, reason),
      transaction: "",
      ...(problem ? { problem } : {}),
    };
  }
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

function conflictReason(current: Reservation | undefined): string {
  if (current?.state === "settled") {
    return `this payment was already used${current.transaction ? ` (settled in ${current.transaction})` : ""}; sign a new payment`;
  }
  if (current?.state === "settling")
    return "this payment is being settled for another request; sign a new payment";
  return "this payment is already in use by another request; sign a new payment";
}
