import { RPC_WRITE_METHODS } from "@tollgate/catalog";
import { grpc, ServiceError } from "@tollgate/platform";
import type { NetworkConfig, UpstreamPolicyConfig } from "../config.ts";
import type { Metrics } from "../metrics.ts";
import { type RpcCall, type RpcOutcome, TransportError } from "./jsonrpc.ts";
import { HedgeBudget, methodClass } from "./latency.ts";
import type { AttemptWatcher, InFlightAttempt } from "./request.ts";
import { Upstream } from "./upstream.ts";

/** Per-operation state: the caller's deadline and the round trips spent so far. */
export interface CallContext {
  /** Epoch milliseconds by which the answer must be back with the caller. */
  deadline: number;
  roundTrips: number;
}

// Answer this long before the caller's deadline, so our own error reaches it first.
const DEADLINE_MARGIN_MS = 50;
// Not worth starting an attempt with less time than this left.
const MIN_ATTEMPT_MS = 10;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A call that changes the chain (eth_sendRawTransaction): sent to one node, at most once. */
const isWrite = (call: RpcCall): boolean => Object.hasOwn(RPC_WRITE_METHODS, call.method);

/**
 * The upstream nodes of one network. Every request picks the best admitted upstream
 * (healthy and in sync first, round-robin among equals), and on a transport failure
 * fails over to the next one; an upstream already tried in this request is retried only
 * after an exponential backoff with full jitter. All of it stays inside the caller's
 * deadline. Retrying is safe for reads only: a request carrying a write (RPC_WRITE_METHODS) goes
 * to one node, once; it moves to another node only when it never left this process (a refused
 * connection, an open breaker), and any failure after it was sent ends the call (README, Writes).
 * A read still unanswered after its upstream's recent quantile is hedged (HedgedRead, below).
 */
export class NetworkPool {
  readonly name: string;
  readonly chainId: number;
  readonly upstreams: Upstream[];
  readonly #policy: UpstreamPolicyConfig;
  readonly #maxLag: bigint;
  readonly #budget: HedgeBudget;
  readonly #hedges: { sent: Counted; won: Counted; suppressed: Counted };
  #next = 0;

  constructor(network: NetworkConfig, policy: UpstreamPolicyConfig, metrics: Metrics) {
    this.name = network.name;
    this.chainId = network.chainId;
    this.#policy = policy;
    this.#maxLag = BigInt(policy.maxLagBlocks);
    this.upstreams = network.upstreams.map(
      (url, index) =>
        new Upstream({
          network: network.name,
          index,
          url,
          connections: policy.connections,
          breakerThreshold: policy.breakerThreshold,
          breakerCooldownMs: policy.breakerCooldownMs,
          maxBodyBytes: policy.maxBodyBytes,
          hedgeQuantile: policy.hedgeQuantile / 100,
          metrics,
        }),
    );
    this.#budget = new HedgeBudget(policy.hedgeBudgetPercent);
    const hedge = (outcome: string) => metrics.hedgesOf({ network: network.name, outcome });
    this.#hedges = { sent: hedge("sent"), won: hedge("won"), suppressed: hedge("suppressed") };
    for (const counter of Object.values(this.#hedges)) counter.inc(0);
  }

  /** Best head among upstreams that answer their polls (undefined before any answer). */
  head(): bigint | undefined {
    let best: bigint | undefined;
    for (const u of this.upstreams) {
      if (u.lastPollOk && !u.wrongChain && u.head !== undefined && (best === undefined || u.head > best))
        best = u.head;
    }
    return best;
  }

  lag(u: Upstream): bigint {
    const best = this.head();
    return best === undefined || u.head === undefined ? 0n : best - u.head;
  }

  healthy(u: Upstream): boolean {
    return !u.wrongChain && u.lastPollOk && u.breaker.state === "closed" && this.lag(u) <= this.#maxLag;
  }

  /** Calls one method; a JSON-RPC error comes back as a rejected RpcError. */
  async call(call: RpcCall, ctx: CallContext): Promise<unknown> {
    const [outcome] = (await this.send([call], ctx)) as [RpcOutcome];
    if (!outcome.ok) throw outcome.error;
    return outcome.result;
  }

  /** One HTTP round trip carrying `calls` (batched when several), with failover and retries. */
  async send(calls: readonly RpcCall[], ctx: CallContext): Promise<RpcOutcome[]> {
    if (this.upstreams.length === 0) {
      throw new ServiceError(
        grpc.status.UNAVAILABLE,
        "upstream_unavailable",
        `no upstream node is configured for ${this.name}`,
      );
    }
    const end = ctx.deadline - DEADLINE_MARGIN_MS;
    const write = calls.some(isWrite);
    const hedging = !write && this.#budget.enabled && this.upstreams.length > 1;
    if (hedging) this.#budget.earn();
    const kind = methodClass(calls);
    const tried: Upstream[] = [];
    let last: TransportError | undefined;
    let sawTimeout = false;
    let outOfTime = false;
    for (let attempt = 0; attempt < this.#policy.maxAttempts; attempt++) {
      let upstream = this.#pick(tried);
      if (upstream && tried.includes(upstream)) {
        // Every admitted upstream already failed once in this request: back off first.
        const ceiling = Math.min(this.#policy.backoffMaxMs, this.#policy.backoffBaseMs * 2 ** (attempt - 1));
        const delay = Math.random() * ceiling;
        if (Date.now() + delay + MIN_ATTEMPT_MS >= end) {
          outOfTime = true;
          break;
        }
        await sleep(delay);
        upstream = this.#pick(tried);
      }
      if (!upstream) break;
      const remaining = end - Date.now();
      if (remaining < MIN_ATTEMPT_MS) {
        outOfTime = true;
        break;
      }
      tried.push(upstream);
      try {
        const timeout = Math.min(this.#policy.timeoutMs, remaining);
        // Hedged when the upstream's quantile leaves a second attempt time to answer.
        const slowAt = hedging ? Date.now() + upstream.latency[kind]!.quantile : Number.POSITIVE_INFINITY;
        const outcomes =
          slowAt + MIN_ATTEMPT_MS < Date.now() + timeout
            ? await new HedgedRead(this, calls, tried, ctx, end, slowAt).run(upstream, timeout)
            : await upstream.send(calls, timeout);
        ctx.roundTrips++;
        return outcomes;
      } catch (err) {
        if (err instanceof ServiceError) {
          // The node answered, too much: the same query would be as large anywhere else.
          ctx.roundTrips++;
          throw err;
        }
        if (!(err instanceof TransportError)) throw err;
        if (err.sent) ctx.roundTrips++;
        if (err.kind === "timeout") sawTimeout = true;
        last = err;
        // The node may have taken the write (a timeout after it arrived, a reset mid-answer):
        // sending it again, here or elsewhere, could broadcast it twice. The client decides.
        if (write && err.sent) break;
      }
    }
    // Slowness reads as a timeout (so does a deadline too short for any attempt); refused
    // connections, throttling and open breakers everywhere read as unavailable.
    throw failure(this.name, last, sawTimeout || (outOfTime && last === undefined));
  }

  /**
   * The second upstream of a slow read: healthy, not tried in this request, and only within the
   * hedge budget (refused over it, counted as suppressed).
   */
  hedgeTarget(tried: readonly Upstream[]): Upstream | undefined {
    const u = this.#pick(tried);
    if (u === undefined || tried.includes(u) || !this.healthy(u)) return undefined;
    if (!this.#budget.spend()) {
      this.#hedges.suppressed.inc();
      return undefined;
    }
    this.#hedges.sent.inc();
    return u;
  }

  /** A hedge answered first: its answer is served. */
  hedgeWon(): void {
    this.#hedges.won.inc();
  }

  /**
   * The upstream to try next: untried before tried; then closed and healthy (rotating,
   * so load spreads), closed but unhealthy or lagging (least lag first), and last an open
   * breaker whose cooldown is over (the call becomes its half-open probe).
   */
  #pick(tried: readonly Upstream[]): Upstream | undefined {
    const now = Date.now();
    let best: Upstream | undefined;
    let bestRank = Number.POSITIVE_INFINITY;
    let bestLag = 0n;
    const n = this.upstreams.length;
    const start = this.#next++ % n;
    for (let i = 0; i < n; i++) {
      const u = this.upstreams[(start + i) % n]!;
      if (u.wrongChain) continue;
      const admits = u.breaker.admits(now);
      if (admits === "no") continue;
      const tier = admits === "probe" ? 2 : this.healthy(u) ? 0 : 1;
      const rank = (tried.includes(u) ? 3 : 0) + tier;
      const lag = this.lag(u);
      if (rank < bestRank || (rank === bestRank && tier === 1 && lag < bestLag)) {
        best = u;
        bestRank = rank;
        bestLag = lag;
      }
    }
    return best;
  }

  async close(): Promise<void> {
    await Promise.all(this.upstreams.map((u) => u.close()));
  }
}

type Counted = { inc(value?: number): void };

/**
 * One read attempt that may be hedged: the first upstream is asked; if it is still unanswered at
 * `slowAt` (told by the request sweep, request.ts: no timer of its own) and the budget allows, a
 * second healthy upstream is asked too. The first answer (a JSON-RPC error included) is served and
 * the other attempt cancelled (undici abort). The attempt fails only when both failed, with the
 * first upstream's error (the pool's retry loop reads it as for any attempt); a result_too_large
 * from either ends it at once (as large anywhere). The hedge is a node call of its own
 * (ctx.roundTrips), the call is still one call to the caller: charged once, or not at all.
 */
class HedgedRead implements AttemptWatcher {
  slowAt: number;
  readonly #pool: NetworkPool;
  readonly #calls: readonly RpcCall[];
  readonly #tried: Upstream[];
  readonly #ctx: CallContext;
  readonly #end: number;
  #timeout = 0;
  #first: InFlightAttempt | undefined;
  #second: InFlightAttempt | undefined;
  #pending = 1;
  #settled = false;
  #firstError: unknown;
  #resolve!: (outcomes: RpcOutcome[]) => void;
  #reject!: (err: unknown) => void;

  constructor(
    pool: NetworkPool,
    calls: readonly RpcCall[],
    tried: Upstream[],
    ctx: CallContext,
    end: number,
    slowAt: number,
  ) {
    this.#pool = pool;
    this.#calls = calls;
    this.#tried = tried;
    this.#ctx = ctx;
    this.#end = end;
    this.slowAt = slowAt;
  }

  run(upstream: Upstream, timeout: number): Promise<RpcOutcome[]> {
    this.#timeout = timeout;
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
    const second = this.#pool.hedgeTarget(this.#tried);
    if (second === undefined) return;
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
    this.#resolve(outcomes);
  };

  readonly #secondAnswered = (outcomes: RpcOutcome[]): void => {
    if (this.#settled) return;
    this.#settled = true;
    this.#first?.cancel();
    this.#pool.hedgeWon();
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

function failure(network: string, last: TransportError | undefined, timedOut: boolean): ServiceError {
  if (timedOut) {
    return new ServiceError(
      grpc.status.DEADLINE_EXCEEDED,
      "upstream_timeout",
      `the ${network} node did not answer in time`,
    );
  }
  if (last?.kind === "bad_response") {
    return new ServiceError(
      grpc.status.UNKNOWN,
      "upstream_error",
      `the ${network} node sent an unreadable answer`,
    );
  }
  return new ServiceError(
    grpc.status.UNAVAILABLE,
    "upstream_unavailable",
    `no healthy ${network} node is reachable right now`,
  );
}
