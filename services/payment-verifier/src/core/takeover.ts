// Who runs a call's settlement, across replicas: this replica renews its liveness, a Settle begins
// the settlement under this replica's ownership, waits for the outcome while another live owner
// (a retry of the same call, here or elsewhere) runs it, and takes it over once that owner died or
// left it orphaned here. A begin whose answer was lost is abandoned once the store answers.
import type { BeginSettle } from "../stores/reservations.ts";
import { type Core, type PaymentRef, SETTLING_TTL_MS, type SettleOutcome, store } from "./context.ts";
import { chargedForNoData, settleUnavailable } from "./refusals.ts";
import { releaser, undo } from "./release.ts";
import type { Header, ParsedPayment, PaymentScheme, PricedCall } from "./types.ts";

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

export interface Liveness {
  /**
   * Marks this replica alive (awaited once, so no Settle of ours begins unowned), then renews it
   * from one interval. An unreachable store is tried again on the next beat: if it stays away past
   * ALIVE_TTL_MS, another replica may take our settlements over once it answers again, and the
   * schemes' settlements are idempotent for that.
   */
  start(): Promise<void>;
  /** Stops the liveness beat (the process is going away). */
  close(): void;
}

export function createLiveness(core: Core): Liveness {
  let heartbeat: NodeJS.Timeout | undefined;
  return {
    async start() {
      let failing = false; // logged once per outage, not on every beat
      const beat = () =>
        core.opts.reservations.heartbeat(core.replica, ALIVE_TTL_MS).then(
          () => {
            failing = false;
          },
          (err: unknown) => {
            if (failing) return;
            failing = true;
            core.opts.logger.warn(
              { err: err instanceof Error ? err.message : err },
              "could not renew this replica's liveness",
            );
          },
        );
      await beat();
      heartbeat ??= setInterval(() => void beat(), HEARTBEAT_MS).unref();
    },
    close() {
      clearInterval(heartbeat);
      heartbeat = undefined;
    },
  };
}

/** What claiming a call's settlement came to: a begin to act on, or the answer already decided. */
type Claimed =
  | { kind: "begun"; begun: BeginSettle }
  | { kind: "answered"; outcome: SettleOutcome | Promise<SettleOutcome> };

/**
 * Begins the settlement of the call `callKey` under this replica. The same call settling under a
 * live owner (a retry while the first Settle still runs, here or on another replica): waits for its
 * outcome, or takes it over once the owner died, answering 503 before the caller's `deadline`.
 */
export async function claim(
  core: Core,
  call: PricedCall,
  scheme: PaymentScheme,
  payment: ParsedPayment,
  id: PaymentRef,
  credentials: readonly Header[],
  callKey: string,
  deadline: number,
): Promise<Claimed> {
  let begun: BeginSettle;
  // The id of the latest begin sent: should its answer be lost, what it began is abandoned.
  let attempt = core.attemptId();
  try {
    begun = await begin(core, callKey, payment.key, id.token, call.requestId, attempt);
    const waitUntil = Math.min(deadline - DEADLINE_MARGIN_MS, core.now() + SETTLE_WAIT_MAX_MS);
    while (!begun.ok && begun.busy) {
      const here = core.inFlight.get(callKey);
      if (here) return { kind: "answered", outcome: here };
      if (core.now() >= waitUntil) {
        chargedForNoData(core, "still_settling", call, scheme, payment);
        return {
          kind: "answered",
          outcome: settleUnavailable(
            "the payment is still being settled by another Settle of this call; retry",
          ),
        };
      }
      await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
      attempt = core.attemptId();
      begun = await begin(core, callKey, payment.key, id.token, call.requestId, attempt);
      // Gone while we waited: the first Settle moved nothing and freed the payment.
      if (!begun.ok && !begun.busy && !begun.current) {
        return {
          kind: "answered",
          outcome: settleUnavailable(
            "the payment's settlement by another Settle of this call moved nothing; retry",
          ),
        };
      }
    }
  } catch (err) {
    // Answered 503, no data: what Verify reserved is freed once the store answers again, and so
    // is what a begin whose answer was lost made `settling` (it ran nothing), unless a later
    // begin or a takeover has it by then (its own attempt id).
    // (A takeover's record is never abandoned: what it took over may have moved money. A retry of
    // the call after the abandon finds the payment gone: answered failed, nothing charged.)
    const lost = attempt;
    const release = releaser(core, call.requestId, call, id, credentials, "store_unavailable");
    core.queue.defer(SETTLING_TTL_MS, async () => {
      await release();
      const freed = await core.opts.reservations.abandon(id.key, id.token, core.replica, lost);
      if (freed) await undo(core, freed, call, id, credentials, "store_unavailable");
    });
    return { kind: "answered", outcome: settleUnavailable((err as Error).message) };
  }
  return { kind: "begun", begun };
}

/**
 * Begins the Settle of the call `callKey`. When nothing of that call runs here (no Settle in
 * flight, none beginning), a `settling` record of ours for it is an orphan (its settlement ended
 * and its `settled` record was lost with the store, or a begin here lost its answer): taken over
 * at once, not waited on until the deadline; the schemes' takeovers find what was sent. One begin
 * of a call claims that at a time (core.beginning), or two could take it over.
 */
async function begin(
  core: Core,
  callKey: string,
  key: string,
  token: string,
  requestId: string,
  attempt: string,
): Promise<BeginSettle> {
  const idle = !core.beginning.has(callKey) && !core.inFlight.has(callKey);
  if (idle) core.beginning.add(callKey);
  try {
    return await store(core, () =>
      core.opts.reservations.beginSettle(key, token, requestId, SETTLING_TTL_MS, core.replica, idle, attempt),
    );
  } finally {
    if (idle) core.beginning.delete(callKey);
  }
}
