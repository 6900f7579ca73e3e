import { grpc, ServiceError } from "@tollgate/platform";
import { Pool } from "undici";
import { BREAKER_GAUGE, type Metrics } from "../metrics.ts";
import { Breaker, type BreakerState } from "./breaker.ts";
import {
  decodeResponse,
  encodeRequest,
  isRateLimit,
  type RpcCall,
  type RpcOutcome,
  TransportError,
} from "./jsonrpc.ts";

// Errors raised before the request could be written: no round trip was spent.
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

export interface UpstreamOptions {
  network: string;
  index: number;
  url: string;
  connections: number;
  breakerThreshold: number;
  breakerCooldownMs: number;
  /** Largest response body read from the node; more is result_too_large. */
  maxBodyBytes: number;
  metrics: Metrics;
}

/** The node's answer is over the byte cap: too large for any upstream, so never retried. */
function tooLarge(limit: number): ServiceError {
  return new ServiceError(
    grpc.status.FAILED_PRECONDITION,
    "result_too_large",
    `the node's answer exceeds ${limit} bytes; narrow the block range or add filters`,
  );
}

/**
 * One node URL: a keep-alive connection pool, its circuit breaker and its observed head.
 * The URL stays private to this object; everything outside sees only the label
 * `<network>-<index>`, since node URLs often embed an API key.
 */
export class Upstream {
  readonly label: string;
  readonly network: string;
  readonly #http: Pool;
  readonly #path: string;
  readonly #headers: Record<string, string>;
  readonly #metrics: Metrics;
  readonly #maxBodyBytes: number;
  readonly breaker: Breaker;
  /** Last head block seen by the head tracker. */
  head: bigint | undefined;
  /** Whether the last head poll got an answer. */
  lastPollOk = false;
  /** eth_chainId disagreed with the catalog: never selected. */
  wrongChain = false;
  chainVerified = false;
  pollInFlight = false;

  constructor(opts: UpstreamOptions) {
    this.network = opts.network;
    this.label = `${opts.network}-${opts.index}`;
    this.#metrics = opts.metrics;
    this.#maxBodyBytes = opts.maxBodyBytes;
    const url = new URL(opts.url);
    this.#path = `${url.pathname}${url.search}`;
    this.#headers = { "content-type": "application/json", accept: "application/json" };
    if (url.username || url.password) {
      const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
      this.#headers.authorization = `Basic ${Buffer.from(credentials).toString("base64")}`;
    }
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
   */
  async send(calls: readonly RpcCall[], timeoutMs: number): Promise<RpcOutcome[]> {
    const method = calls.length === 1 ? calls[0]!.method : "batch";
    const labels = { network: this.network, upstream: this.label, method };
    const started = performance.now();
    let outcome = "ok";
    try {
      const outcomes = await this.breaker.execute(async () => {
        const answer = await this.#post(encodeRequest(calls), calls.length, timeoutMs);
        // A throttled node fails the attempt, so the pool moves on to another one.
        if (answer.some((o) => !o.ok && isRateLimit(o.error))) {
          throw new TransportError("rate_limited", "upstream is rate limiting", { sent: true });
        }
        return answer;
      });
      if (outcomes.some((o) => !o.ok)) outcome = "rpc_error";
      return outcomes;
    } catch (err) {
      if (err instanceof ServiceError) {
        outcome = "too_large";
        throw err;
      }
      outcome = err instanceof TransportError ? err.kind : "network_error";
      throw err instanceof TransportError
        ? err
        : new TransportError("network_error", "request failed", { sent: true });
    } finally {
      if (outcome !== "breaker_open") {
        this.#metrics.upstreamLatencyOf({ ...labels, outcome }).observe((performance.now() - started) / 1000);
      }
      if (outcome !== "ok") this.#metrics.upstreamErrorsOf({ ...labels, outcome }).inc();
    }
  }

  async #post(body: string, count: number, timeoutMs: number): Promise<RpcOutcome[]> {
    // One timer per request, cleared when the answer is in: AbortSignal.timeout would leave every
    // request's timer to fire later and build an abort error then. (undici's own header timeout
    // runs on a wheel of about a second, too coarse for attempt timeouts of a few hundred ms.)
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(
      () => {
        timedOut = true;
        abort.abort();
      },
      Math.max(1, timeoutMs),
    );
    let text: string;
    let status: number;
    try {
      const res = await this.#http.request({
        path: this.#path,
        method: "POST",
        headers: this.#headers,
        body,
        signal: abort.signal,
      });
      status = res.statusCode;
      if (status < 200 || status > 299) {
        await res.body.dump().catch(() => {});
        throw new TransportError("http_error", `upstream answered HTTP ${status}`, { sent: true, status });
      }
      // Read with a byte cap: a huge answer is refused as it streams in, never buffered whole.
      const declared = Number(res.headers["content-length"]);
      if (declared > this.#maxBodyBytes) {
        res.body.destroy();
        throw tooLarge(this.#maxBodyBytes);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > this.#maxBodyBytes) {
          res.body.destroy();
          throw tooLarge(this.#maxBodyBytes);
        }
        chunks.push(chunk as Buffer);
      }
      text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)).toString("utf8");
    } catch (err) {
      if (err instanceof TransportError || err instanceof ServiceError) throw err;
      if (timedOut) throw new TransportError("timeout", `no answer within ${timeoutMs} ms`, { sent: true });
      const code = errorCode(err);
      if (code && NOT_SENT.has(code)) {
        throw new TransportError("connect_error", `cannot connect (${code})`, { sent: false });
      }
      throw new TransportError("network_error", `connection failed (${code ?? "unknown"})`, { sent: true });
    } finally {
      clearTimeout(timer);
    }
    return decodeResponse(text, count);
  }

  async close(): Promise<void> {
    await this.#http.destroy().catch(() => {});
  }
}

function errorCode(err: unknown): string | undefined {
  // undici wraps socket errors; the system code may sit on the error or on its cause.
  for (
    let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0;
    e && i < 4;
    e = e.cause as typeof e, i++
  ) {
    if (typeof e.code === "string" && e.code !== "UND_ERR_SOCKET") return e.code;
  }
  return undefined;
}
