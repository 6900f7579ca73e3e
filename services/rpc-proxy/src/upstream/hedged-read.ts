// A read that may be hedged (README, Hedged reads): split from pool.ts, which starts it.
import { type RpcCall, type RpcOutcome, TransportError } from "./jsonrpc.ts";
import type { AttemptWatcher, InFlightAttempt } from "./request.ts";
import type { Upstream } from "./upstream.ts";

/** Not worth starting an attempt with less time than this left. */
export const MIN_ATTEMPT_MS = 10;

/** What a hedged read asks of its pool. */
export interface HedgeSource {
  /** The second upstream for a read slow on `slow`, within the hedge budget; undefined: no hedge. */
  hedgeTarget(slow: Upstream, tried: readonly Upstream[], minHead: bigint | undefined): Upstream | undefined;
  /** The hedge's answer was served before `slow`'s. */
  hedgeWon(slow: Upstream): void;
}

/**
 * One read attempt that may be hedged: the first upstream is asked; if it is still unanswered at
 * `slowAt` (told by the request sweep, request.ts: no timer of its own) and the budget allows, a
 * second healthy upstream is asked too. The first answer (a JSON-RPC error included) is served and
 * the other attempt cancelled (undici abort). The attempt fails only when both failed, with the
 * first upstream's error (the pool's retry loop reads it as for any attempt); a result_too_large
 * from either ends it at once (as large anywhere). The hedge is a node call of its own
 * (ctx.roundTrips), the call is still one call to the caller: charged once, or not at all.
 */
export class HedgedRead implements AttemptWatcher {
  slowAt: number;
  /** Whose answer was served (the pool checks it: integrity.ts). */
  answeredBy: Upstream | undefined;
  readonly #pool: HedgeSource;
  readonly #calls: readonly RpcCall[];
  readonly #tried: Upstream[];
  readonly #minHead: bigint | undefined;
  readonly #ctx: { roundTrips: number };
  readonly #end: number;
  #timeout = 0;
  #first: InFlightAttempt | undefined;
  #second: InFlightAttempt | undefined;
  #firstUpstream: Upstream | undefined;
  #secondUpstream: Upstream | undefined;
  #pending = 1;
  #settled = false;
  #firstError: unknown;
  #resolve!: (outcomes: RpcOutcome[]) => void;
  #reject!: (err: unknown) => void;

  constructor(
    pool: HedgeSource,
    calls: readonly RpcCall[],
    tried: Upstream[],
    minHead: bigint | undefined,
    ctx: { roundTrips: number },
    end: number,
    slowAt: number,
  ) {
    this.#pool = pool;
    this.#calls = calls;
    this.#tried = tried;
    this.#minHead = minHead;
    this.#ctx = ctx;
    this.#end = end;
    this.slowAt = slowAt;
  }

  run(upstream: Upstream, timeout: number): Promise<RpcOutcome[]> {
    this.#timeout = timeout;
    this.#firstUpstream = upstream;
    const answer = new Promise<RpcOutcome[]>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    upstream.send(this.#calls, timeout, this).then(this.#firstAnswered, this.#firstFailed);
    return answer;
  }

  started(attempt: InFlightAttempt): void {
    if (this.#first === undefined) this.#first = attempt;
    else this.#second = attempt;
  }

  slow(): void {
    // The second attempt is never slow itself: one hedge per attempt.
    this.slowAt = Number.POSITIVE_INFINITY;
    if (this.#settled) return;
    const remaining = this.#end - Date.now();
    if (remaining < MIN_ATTEMPT_MS) return;
    const second = this.#pool.hedgeTarget(this.#firstUpstream!, this.#tried, this.#minHead);
    if (second === undefined) return;
    this.#secondUpstream = second;
    this.#tried.push(second);
    this.#pending++;
    this.#ctx.roundTrips++;
    second
      .send(this.#calls, Math.min(this.#timeout, remaining), this)
      .then(this.#secondAnswered, this.#secondFailed);
  }

  readonly #firstAnswered = (outcomes: RpcOutcome[]): void => {
    if (this.#settled) return;
    this.#settled = true;
    this.#second?.cancel();
    this.answeredBy = this.#firstUpstream;
    this.#resolve(outcomes);
  };

  readonly #secondAnswered = (outcomes: RpcOutcome[]): void => {
    if (this.#settled) return;
    this.#settled = true;
    this.#first?.cancel();
    this.answeredBy = this.#secondUpstream;
    this.#pool.hedgeWon(this.#firstUpstream!);
    this.#resolve(outcomes);
  };

  readonly #firstFailed = (err: unknown): void => {
    this.#firstError = err;
    this.#failed(err);
  };

  readonly #secondFailed = (err: unknown): void => {
    this.#failed(err);
  };

  #failed(err: unknown): void {
    if (this.#settled) return;
    if (!(err instanceof TransportError)) {
      this.#settled = true;
      this.#first?.cancel();
      this.#second?.cancel();
      this.#reject(err);
      return;
    }
    if (--this.#pending > 0) return;
    this.#settled = true;
    this.#reject(this.#firstError ?? err);
  }
}
