import { RPC_WRITE_METHODS } from "@tollgate/catalog";
import { grpc, type Logger, once, ServiceError } from "@tollgate/platform";
import type { NetworkConfig, UpstreamPolicyConfig } from "../config.ts";
import { failure } from "../errors.ts";
import { type Metrics, type UpstreamSeries, upstreamSeries } from "../metrics.ts";
import { answerHash, answerHead, majorityHead, pinLatest } from "./consensus.ts";
import { HedgedRead, type HedgeSource, MIN_ATTEMPT_MS } from "./hedged-read.ts";
import { Integrity } from "./integrity.ts";
import { type RpcCall, type RpcOutcome, TransportError } from "./jsonrpc.ts";
import { HedgeBudget, methodClass } from "./latency.ts";
import { type QuorumHooks, QuorumRead } from "./quorum.ts";
import { Upstream } from "./upstream.ts";

/** Per-operation state: the caller's deadline and the round trips spent so far. */
export interface CallContext {
  /** Epoch milliseconds by which the answer must be back with the caller. */
  deadline: number;
  roundTrips: number;
}

// Answer this long before the caller's deadline, so our own error reaches it first.
const DEADLINE_MARGIN_MS = 50;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A call that changes the chain (eth_sendRawTransaction): sent to one node, at most once. */
const isWrite = (call: RpcCall): boolean => Object.hasOwn(RPC_WRITE_METHODS, call.method);

/**
 * Why an upstream is out of rotation, one policy (README, Consistent head and rotation): it serves
 * another chain, does not answer its head polls, its breaker is open, it disagreed with a quorum or
 * an answer of its failed an integrity check (cordoned for UPSTREAM_CORDON_MS), it is over
 * UPSTREAM_MAX_LAG_BLOCKS behind the consistent head, or its head has not moved for UPSTREAM_STALL_MS
 * while behind it.
 */
export const OUT_OF_ROTATION = [
  "wrong_chain",
  "unreachable",
  "breaker_open",
  "disagreed",
  "integrity",
  "lagging",
  "stalled",
] as const;
export type OutOfRotation = (typeof OUT_OF_ROTATION)[number];

const toQuantity = (n: bigint) => `0x${n.toString(16)}`;

/** An answer that failed an integrity check, as the retry loop reads it (one object, never thrown). */
const CAUGHT_LYING = new TransportError("bad_response", "the node's answer failed an integrity check", {
  sent: true,
});

/**
 * The upstream nodes of one network. Every request picks the best admitted upstream
 * (healthy and in sync first, round-robin among equals), and on a transport failure
 * fails over to the next one; an upstream already tried in this request is retried only
 * after an exponential backoff with full jitter. All of it stays inside the caller's
 * deadline. Retrying is safe for reads only: a request carrying a write (RPC_WRITE_METHODS) goes
 * to one node, once; it moves to another node only when it never left this process (a refused
 * connection, an open breaker), and any failure after it was sent ends the call (README, Writes).
 * A read still unanswered after its upstream's recent quantile is hedged (hedged-read.ts). Where
 * several nodes could answer, `latest` is pinned to the consistent head, and a quorum method
 * (CONSENSUS_<NETWORK>) is sent to n of them and served when k agree (quorum.ts).
 */
export class NetworkPool implements HedgeSource {
  readonly name: string;
  readonly chainId: number;
  readonly upstreams: Upstream[];
  readonly #policy: UpstreamPolicyConfig;
  readonly #maxLag: bigint;
  readonly #budget: HedgeBudget;
  /** Each upstream's series, by index. */
  readonly #series: UpstreamSeries[];
  /** Integrity checks of single-node answers and the ring of recent block hashes (integrity.ts). */
  readonly #integrity: Integrity;
  /** Some upstream has a call budget (UPSTREAM_LIMITS_<NETWORK>). */
  readonly #budgeted: boolean;
  /** `latest` is pinned to the consistent head where more than one node could answer. */
  readonly #pinning: boolean;
  readonly #quorum: { methods: ReadonlySet<string>; k: number; n: number; hooks: QuorumHooks } | undefined;
  readonly #metrics: Metrics;
  readonly #logger: Logger;
  /** The consistent head: the highest block a majority in rotation reached, never lowered. */
  #head: bigint | undefined;
  #headHex = "";
  #next = 0;

  constructor(network: NetworkConfig, policy: UpstreamPolicyConfig, metrics: Metrics, logger: Logger) {
    this.name = network.name;
    this.chainId = network.chainId;
    this.#policy = policy;
    this.#metrics = metrics;
    this.#logger = logger;
    this.#maxLag = BigInt(policy.maxLagBlocks);
    this.#pinning = network.upstreams.length > 1;
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
          limit: network.limits?.[index],
          metrics,
        }),
    );
    this.#budget = new HedgeBudget(policy.hedgeBudgetPercent);
    this.#integrity = new Integrity(network.chainId);
    this.#budgeted = this.upstreams.some((u) => u.budget !== undefined);
    this.#series = this.upstreams.map((u) => upstreamSeries(metrics, network.name, u.label));
    const consensus = network.consensus;
    const hooks = this.#quorumHooks();
    this.#quorum = consensus && {
      methods: new Set(consensus.methods),
      k: consensus.k,
      n: consensus.n,
      hooks,
    };
  }

  /** The quorum policy (CONSENSUS_<NETWORK>) as configured, for ListNetworks. */
  get quorum(): { methods: string[]; k: number; n: number } | undefined {
    const q = this.#quorum;
    return q && { methods: [...q.methods], k: q.k, n: q.n };
  }

  /**
   * The consistent head (undefined before any poll answered): the highest block that at least half
   * (rounded up) of the upstreams answering their polls on the right chain, not cordoned, reached;
   * with one upstream, its head. It never goes down: a majority that falls behind, or leaves,
   * leaves it where it was. `latest` reads are pinned to it, log ranges read against it.
   */
  head(): bigint | undefined {
    return this.#head;
  }

  /** Recomputes the consistent head from the heads last polled (the head tracker, after each poll). */
  updateHead(now = Date.now()): void {
    const heads: bigint[] = [];
    for (const u of this.upstreams) {
      if (!u.wrongChain && u.lastPollOk && u.head !== undefined && u.cordonedUntil <= now) heads.push(u.head);
    }
    const reached = majorityHead(heads);
    if (reached !== undefined && (this.#head === undefined || reached > this.#head)) {
      this.#head = reached;
      this.#headHex = toQuantity(reached);
    }
  }

  /** Blocks behind the consistent head (0 at or ahead of it). */
  lag(u: Upstream): bigint {
    const head = this.#head;
    return head === undefined || u.head === undefined || u.head >= head ? 0n : head - u.head;
  }

  /** Why `u` is out of rotation (OUT_OF_ROTATION), or undefined: in rotation. */
  outOfRotation(u: Upstream, now = Date.now()): OutOfRotation | undefined {
    if (u.wrongChain) return "wrong_chain";
    if (!u.lastPollOk) return "unreachable";
    if (u.breaker.state !== "closed") return "breaker_open";
    if (u.cordonedUntil > now) return u.cordonReason;
    const lag = this.lag(u);
    if (lag > this.#maxLag) return "lagging";
    if (lag > 0n && now - u.headChangedAt > this.#policy.stallMs) return "stalled";
    return undefined;
  }

  healthy(u: Upstream, now = Date.now()): boolean {
    return this.outOfRotation(u, now) === undefined;
  }

  /** Calls one method; a JSON-RPC error comes back as a rejected RpcError. */
  async call(call: RpcCall, ctx: CallContext): Promise<unknown> {
    const [outcome] = (await this.send([call], ctx)) as [RpcOutcome];
    if (!outcome.ok) throw outcome.error;
    return outcome.result;
  }

  /**
   * One HTTP round trip carrying `calls` (batched when several), with failover and retries; or, for
   * a quorum method (CONSENSUS_<NETWORK>), one to each of n upstreams. Where `latest` is pinned, the
   * calls read the consistent head, only nodes that reached it are asked, and eth_blockNumber
   * answers it.
   */
  async send(calls: readonly RpcCall[], ctx: CallContext): Promise<RpcOutcome[]> {
    if (this.upstreams.length === 0) {
      throw new ServiceError(
        grpc.status.UNAVAILABLE,
        "upstream_unavailable",
        `no upstream node is configured for ${this.name}`,
      );
    }
    const head = this.#pinning ? this.#head : undefined;
    const quorum = this.#quorum !== undefined && this.#needsQuorum(calls);
    if (head === undefined) {
      // A quorum compares answers at one pinned block: none before a head is known.
      if (quorum) {
        this.#quorum!.hooks.outcome("unavailable");
        throw new ServiceError(
          grpc.status.UNAVAILABLE,
          "upstream_unavailable",
          `no ${this.name} node has reported its head block yet; retry shortly`,
        );
      }
      return this.#send(calls, ctx, undefined);
    }
    const headHex = this.#headHex;
    const pinned = pinLatest(calls, headHex);
    const outcomes = quorum
      ? await this.#quorumSend(pinned, ctx, head)
      : await this.#send(pinned, ctx, pinned === calls ? undefined : head);
    answerHead(calls, outcomes, headHex);
    return outcomes;
  }

  #needsQuorum(calls: readonly RpcCall[]): boolean {
    const methods = this.#quorum!.methods;
    for (const call of calls) if (methods.has(call.method)) return true;
    return false;
  }

  /** In rotation and, for a read pinned to `minHead`, at or past that block. */
  #serves(u: Upstream, minHead: bigint | undefined, now: number): boolean {
    return (minHead === undefined || (u.head !== undefined && u.head >= minHead)) && this.healthy(u, now);
  }

  /** The failover loop; `minHead`: a pinned read, for nodes at or past that block first. */
  async #send(
    calls: readonly RpcCall[],
    ctx: CallContext,
    minHead: bigint | undefined,
  ): Promise<RpcOutcome[]> {
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
      let upstream = this.#pick(tried, minHead);
      if (upstream && tried.includes(upstream)) {
        // Every admitted upstream already failed once in this request: back off first.
        const ceiling = Math.min(this.#policy.backoffMaxMs, this.#policy.backoffBaseMs * 2 ** (attempt - 1));
        const delay = Math.random() * ceiling;
        if (Date.now() + delay + MIN_ATTEMPT_MS >= end) {
          outOfTime = true;
          break;
        }
        await sleep(delay);
        upstream = this.#pick(tried, minHead);
      }
      if (!upstream) break;
      const remaining = end - Date.now();
      if (remaining < MIN_ATTEMPT_MS) {
        outOfTime = true;
        break;
      }
      tried.push(upstream);
      upstream.budget?.take(Date.now());
      try {
        const timeout = Math.min(this.#policy.timeoutMs, remaining);
        // Hedged when the upstream's quantile leaves a second attempt time to answer.
        const slowAt = hedging ? Date.now() + upstream.latency[kind]!.quantile : Number.POSITIVE_INFINITY;
        let outcomes: RpcOutcome[];
        let answeredBy = upstream;
        if (slowAt + MIN_ATTEMPT_MS < Date.now() + timeout) {
          const read = new HedgedRead(this, calls, tried, minHead, ctx, end, slowAt);
          outcomes = await read.run(upstream, timeout);
          answeredBy = read.answeredBy ?? upstream;
        } else {
          outcomes = await upstream.send(calls, timeout);
        }
        ctx.roundTrips++;
        // A write's answer is served as it came: it cannot be asked of another node.
        if (write || this.#integrity.check(calls, outcomes, answeredBy.index, this.#head)) return outcomes;
        // Caught lying: never served; the read goes to another node (the caller pays one answer).
        this.#caught(answeredBy);
        last = CAUGHT_LYING;
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
  hedgeTarget(slow: Upstream, tried: readonly Upstream[], minHead: bigint | undefined): Upstream | undefined {
    const u = this.#pick(tried, minHead);
    const now = Date.now();
    if (u === undefined || tried.includes(u) || !this.#serves(u, minHead, now)) return undefined;
    const hedges = this.#series[slow.index]!.hedges;
    if (!this.#budget.spend()) {
      hedges.suppressed.inc();
      return undefined;
    }
    hedges.sent.inc();
    u.budget?.take(now);
    return u;
  }

  /** A hedge answered before `slow`: its answer is served. */
  hedgeWon(slow: Upstream): void {
    this.#series[slow.index]!.hedges.won.inc();
  }

  /** Out of rotation for UPSTREAM_CORDON_MS, for `reason`. */
  #cordon(u: Upstream, reason: "disagreed" | "integrity"): void {
    u.cordonedUntil = Date.now() + this.#policy.cordonMs;
    u.cordonReason = reason;
    this.#metrics.cordoned.set({ network: this.name, upstream: u.label, reason }, 1);
  }

  /** `u`'s answer failed an integrity check: cordoned, counted, logged with hashes and numbers only. */
  #caught(u: Upstream): void {
    const { check, method, block, expected, got } = this.#integrity.failure;
    this.#cordon(u, "integrity");
    this.#series[u.index]!.integrity[check].inc();
    this.#logger.warn(
      {
        network: this.name,
        upstream: u.label,
        check,
        method,
        block,
        expected,
        got,
        consensusHead: this.#headHex,
        cordonMs: this.#policy.cordonMs,
      },
      "upstream failed an integrity check; cordoned, the read goes to another upstream",
    );
  }

  /**
   * The upstream to try next: untried before tried; then in rotation and, for a pinned read, at or
   * past `minHead` (rotating, so load spreads), closed but out of rotation or behind (least lag
   * first), and last an open breaker whose cooldown is over (the call becomes its half-open probe).
   * An upstream on another chain, or cordoned, is never picked; nor one out of its call budget
   * (UPSTREAM_LIMITS_<NETWORK>, counted as a skip).
   */
  #pick(tried: readonly Upstream[], minHead: bigint | undefined): Upstream | undefined {
    const now = Date.now();
    let best: Upstream | undefined;
    let bestRank = Number.POSITIVE_INFINITY;
    let bestLag = 0n;
    const n = this.upstreams.length;
    const start = this.#next++ % n;
    for (let i = 0; i < n; i++) {
      const u = this.upstreams[(start + i) % n]!;
      if (u.wrongChain || u.cordonedUntil > now) continue;
      const admits = u.breaker.admits(now);
      if (admits === "no" || (this.#budgeted && this.#overBudget(u, now))) continue;
      const tier = admits === "probe" ? 2 : this.#serves(u, minHead, now) ? 0 : 1;
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

  /** Out of its call budget now (counted as a skip). */
  #overBudget(u: Upstream, now: number): boolean {
    const refused = u.budget?.refuses(now);
    if (refused === undefined) return false;
    this.#series[u.index]!.skips[refused].inc();
    return true;
  }

  /**
   * A quorum read: the pinned calls go to up to n upstreams in rotation that reached `head`
   * (rotating, so load spreads), at once; fewer than k such upstreams is upstream_unavailable. Each
   * is a node call of Tollgate's own (ctx.roundTrips); the caller's call is one call, charged only
   * when served.
   */
  #quorumSend(calls: readonly RpcCall[], ctx: CallContext, head: bigint): Promise<RpcOutcome[]> {
    const { k, n, hooks } = this.#quorum!;
    const now = Date.now();
    const chosen: Upstream[] = [];
    const count = this.upstreams.length;
    const start = this.#next++ % count;
    for (let i = 0; i < count && chosen.length < n; i++) {
      const u = this.upstreams[(start + i) % count]!;
      if (this.#serves(u, head, now) && !(this.#budgeted && this.#overBudget(u, now))) chosen.push(u);
    }
    if (chosen.length < k) {
      hooks.outcome("unavailable");
      throw new ServiceError(
        grpc.status.UNAVAILABLE,
        "upstream_unavailable",
        `a quorum of ${k} ${this.name} nodes is needed and fewer are in rotation right now`,
      );
    }
    const remaining = ctx.deadline - DEADLINE_MARGIN_MS - now;
    if (remaining < MIN_ATTEMPT_MS) throw failure(this.name, undefined, true);
    ctx.roundTrips += chosen.length;
    for (const u of chosen) u.budget?.take(now);
    return new QuorumRead(this.name, k, hooks).run(
      chosen,
      calls,
      Math.min(this.#policy.timeoutMs, remaining),
    );
  }

  /** Out of rotation for UPSTREAM_CORDON_MS: it gave an answer the quorum did not. */
  #quorumHooks(): QuorumHooks {
    const network = this.name;
    const outcomes = {
      agreed: this.#metrics.quorumOf({ network, outcome: "agreed" }),
      disagreement: this.#metrics.quorumOf({ network, outcome: "disagreement" }),
      unavailable: this.#metrics.quorumOf({ network, outcome: "unavailable" }),
    };
    // Every series from the start (0), quorum or not: dashboards and alerts read them as rates.
    for (const counter of Object.values(outcomes)) counter.inc(0);
    const disagreed = once((label) => this.#metrics.disagreementsOf({ network, upstream: label }));
    for (const u of this.upstreams) disagreed(u.label).inc(0);
    return {
      outcome: (outcome) => outcomes[outcome].inc(),
      noAnswer: (last, timedOut) => failure(network, last, timedOut),
      disagreed: (u, key, quorum, agreed) => {
        this.#cordon(u, "disagreed");
        disagreed(u.label).inc();
        this.#logger.warn(
          {
            network,
            upstream: u.label,
            answer: answerHash(key),
            quorum: answerHash(quorum),
            agreed: agreed.map((a) => a.label),
            block: this.#headHex,
            cordonMs: this.#policy.cordonMs,
          },
          "upstream disagreed with the quorum; cordoned",
        );
      },
      split: (answers) => {
        this.#logger.warn(
          {
            network,
            block: this.#headHex,
            answers: answers.map((a) => ({
              answer: answerHash(a.key),
              upstreams: a.upstreams.map((u) => u.label),
            })),
          },
          "no quorum: the upstreams disagree (upstream_disagreement)",
        );
      },
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.upstreams.map((u) => u.close()));
  }
}
