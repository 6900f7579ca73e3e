import { once, ServiceError } from "@tollgate/platform";
import { type Dispatcher, Pool } from "undici";
import { BREAKER_GAUGE, type Metrics } from "../metrics.ts";
import { Breaker, type BreakerState, type BreakerTicket } from "./breaker.ts";
import { CallBudget, type UpstreamLimit } from "./budget.ts";
import {
  decodeResponse,
  encodeRequest,
  isRateLimit,
  type RpcCall,
  type RpcOutcome,
  TransportError,
} from "./jsonrpc.ts";
import { LatencyWindow, METHOD_CLASSES, methodClass } from "./latency.ts";
import { type AttemptWatcher, postJson } from "./request.ts";

export interface UpstreamOptions {
  network: string;
  index: number;
  url: string;
  connections: number;
  breakerThreshold: number;
  breakerCooldownMs: number;
  /** Largest response body read from the node; more is result_too_large. */
  maxBodyBytes: number;
  /** 0..1: the quantile of recent answers a hedged read waits for (latency.ts). */
  hedgeQuantile: number;
  /** Its call budget (UPSTREAM_LIMITS_<NETWORK>); undefined: none. */
  limit?: UpstreamLimit | undefined;
  metrics: Metrics;
}

/**
 * One node URL: a keep-alive connection pool, its circuit breaker and its observed head.
 * The URL stays private to this object; everything outside sees only the label
 * `<network>-<index>`, since node URLs often embed an API key.
 */
export class Upstream {
  readonly label: string;
  readonly network: string;
  /** Its place in UPSTREAMS_<NETWORK> (the label's number). */
  readonly index: number;
  readonly #http: Pool;
  /** The dispatch options of every request but its body (undici copies what it keeps). */
  readonly #request: Dispatcher.DispatchOptions;
  readonly #metrics: Metrics;
  /** Latency series of answered requests, by JSON-RPC method (a handful: the operations' methods). */
  readonly #answered = once((method) =>
    this.#metrics.upstreamLatencyOf({ network: this.network, upstream: this.label, method, outcome: "ok" }),
  );
  readonly #maxBodyBytes: number;
  readonly breaker: Breaker;
  /** Recent answer latencies, one window per method class (latency.ts): a hedged read's delay. */
  readonly latency: LatencyWindow[];
  /** Last head block seen by the head tracker. */
  head: bigint | undefined;
  /** When the tracker last saw the head move (epoch ms): a head unmoved behind the others is stalled. */
  headChangedAt = 0;
  /** Out of rotation until then (epoch ms): it disagreed with a quorum or failed an integrity check (pool.ts). */
  cordonedUntil = 0;
  /** Why it was last cordoned. */
  cordonReason: "disagreed" | "integrity" = "disagreed";
  /** Its call budget (budget.ts); undefined: unlimited, nothing counted. */
  readonly budget: CallBudget | undefined;
  /** Why it was out of rotation at the last publish (head-tracker.ts), undefined: in rotation. */
  published: string | undefined;
  /** Whether the last head poll got an answer. */
  lastPollOk = false;
  /** eth_chainId disagreed with the catalog: never selected. */
  wrongChain = false;
  chainVerified = false;
  pollInFlight = false;

  constructor(opts: UpstreamOptions) {
    this.network = opts.network;
    this.index = opts.index;
    this.label = `${opts.network}-${opts.index}`;
    this.#metrics = opts.metrics;
    this.#maxBodyBytes = opts.maxBodyBytes;
    this.budget = opts.limit ? new CallBudget(opts.limit) : undefined;
    this.latency = Array.from({ length: METHOD_CLASSES }, () => new LatencyWindow(opts.hedgeQuantile));
    const url = new URL(opts.url);
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json",
    };
    if (url.username || url.password) {
      const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
      headers.authorization = `Basic ${Buffer.from(credentials).toString("base64")}`;
    }
    this.#request = { path: `${url.pathname}${url.search}`, method: "POST", headers };
    this.#http = new Pool(url.origin, {
      connections: opts.connections,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 120_000,
    });
    const labels = { network: this.network, upstream: this.label };
    this.breaker = new Breaker({
      threshold: opts.breakerThreshold,
      cooldownMs: opts.breakerCooldownMs,
      onChange: (state: BreakerState) => this.#metrics.breakerState.set(labels, BREAKER_GAUGE[state]),
    });
    this.#metrics.breakerState.set(labels, BREAKER_GAUGE.closed);
    this.#metrics.upstreamHealthy.set(labels, 0);
  }

  /**
   * Sends one HTTP request carrying `calls` (a batch when more than one) through the
   * breaker. Resolves with one outcome per call; rejects with a TransportError, or with
   * result_too_large when the answer is over the byte cap (the node is fine: no breaker count).
   * A hedged read passes its watcher (pool.ts), which may cancel the attempt.
   */
  async send(calls: readonly RpcCall[], timeoutMs: number, watcher?: AttemptWatcher): Promise<RpcOutcome[]> {
    const method = calls.length === 1 ? calls[0]!.method : "batch";
    const ticket = this.breaker.enter();
    if (ticket === undefined) {
      this.#count(method, "breaker_open");
      throw new TransportError("breaker_open", "circuit breaker is open", { sent: false });
    }
    const started = performance.now();
    let outcomes: RpcOutcome[];
    try {
      const text = await postJson(
        this.#http,
        { ...this.#request, body: encodeRequest(calls) },
        timeoutMs,
        this.#maxBodyBytes,
        watcher,
      );
      outcomes = decodeResponse(text, calls.length);
    } catch (err) {
      return this.#failed(err, ticket, method, started);
    }
    let outcome = "ok";
    for (const o of outcomes) {
      if (o.ok) continue;
      // A throttled node fails the attempt, so the pool moves on to another one.
      if (isRateLimit(o.error)) {
        const throttled = new TransportError("rate_limited", "upstream is rate limiting", { sent: true });
        return this.#failed(throttled, ticket, method, started);
      }
      outcome = "rpc_error";
    }
    this.breaker.succeeded(ticket);
    const ms = performance.now() - started;
    this.latency[methodClass(calls)]!.record(ms);
    const seconds = ms / 1000;
    if (outcome === "ok") this.#answered(method).observe(seconds);
    else this.#observe(method, outcome, seconds);
    return outcomes;
  }

  #failed(err: unknown, ticket: BreakerTicket, method: string, started: number): never {
    if (err instanceof TransportError && err.kind === "cancelled") {
      // The other attempt of a hedged read answered: no verdict on this node (a probe's reopens).
      if (ticket === "probe") this.breaker.failed(ticket);
      throw err;
    }
    const seconds = (performance.now() - started) / 1000;
    if (err instanceof ServiceError) {
      // Over the byte cap: the node answered; not its failure.
      this.breaker.neutral(ticket);
      this.#observe(method, "too_large", seconds);
      throw err;
    }
    const failure =
      err instanceof TransportError
        ? err
        : new TransportError("network_error", "request failed", { sent: true });
    this.breaker.failed(ticket);
    this.#observe(method, failure.kind, seconds);
    throw failure;
  }

  #observe(method: string, outcome: string, seconds: number): void {
    const labels = { network: this.network, upstream: this.label, method, outcome };
    this.#metrics.upstreamLatencyOf(labels).observe(seconds);
    this.#metrics.upstreamErrorsOf(labels).inc();
  }

  #count(method: string, outcome: string): void {
    this.#metrics.upstreamErrorsOf({ network: this.network, upstream: this.label, method, outcome }).inc();
  }

  async close(): Promise<void> {
    await this.#http.destroy().catch(() => {});
  }
}
