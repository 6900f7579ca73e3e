// One HTTP request to a node, as an undici dispatch handler: the body is gathered from its chunks
// under the byte cap, with no Readable stream, async iterator, AbortController or timer of its own
// per request. Attempt timeouts, and the moment a hedged read's first attempt counts as slow, are
// kept by one sweep every SWEEP_MS over the requests in flight.
import { grpc, ServiceError } from "@tollgate/platform";
import type { Dispatcher } from "undici";
import { TransportError } from "./jsonrpc.ts";

// Errors raised before the request could be written: no round trip was spent.
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/**
 * How often attempt deadlines are checked: a timeout fires up to this late (attempts last a few
 * hundred ms to seconds, and the pool keeps a 50 ms margin before the caller's deadline). undici's
 * own header timeout runs on a wheel of about a second, too coarse.
 */
const SWEEP_MS = 10;
/** A refused (non-2xx) answer's body is drained to keep the connection, up to this much. */
const DRAIN_MAX_BYTES = 128 * 1024;

/** The node's answer is over the byte cap: too large for any upstream, so never retried. */
function tooLarge(limit: number): ServiceError {
  return new ServiceError(
    grpc.status.FAILED_PRECONDITION,
    "result_too_large",
    `the node's answer exceeds ${limit} bytes; narrow the block range or add filters`,
  );
}

/**
 * Who follows an attempt (a hedged read, pool.ts): handed the attempt when it starts, so it can
 * cancel it, and told once when it is still unanswered at `slowAt`.
 */
export interface AttemptWatcher {
  /** Epoch milliseconds; Infinity: never slow. Read when the attempt starts. */
  readonly slowAt: number;
  started(attempt: InFlightAttempt): void;
  slow(): void;
}

/** An attempt in flight, as its watcher sees it. */
export interface InFlightAttempt {
  /** Drops the attempt (undici abort): its promise rejects with CANCELLED, its answer is never read. */
  cancel(): void;
}

/** The rejection of a cancelled attempt: one object, not one per cancel. */
const CANCELLED = new TransportError("cancelled", "the read was answered by another upstream", {
  sent: true,
});

const inFlight = new Set<NodeRequest>();
let sweeper: NodeJS.Timeout | undefined;

function sweep(): void {
  if (inFlight.size === 0) {
    clearInterval(sweeper);
    sweeper = undefined;
    return;
  }
  const now = Date.now();
  for (const request of inFlight) {
    if (request.deadline <= now) request.expire();
    else if (request.slowAt <= now) request.slow();
  }
}

/**
 * Sends `body` and resolves with the answer's text; rejects with a TransportError, or with
 * result_too_large once more than `maxBytes` arrived (the rest is never read).
 */
export function postJson(
  pool: Dispatcher,
  options: Dispatcher.DispatchOptions,
  timeoutMs: number,
  maxBytes: number,
  watcher?: AttemptWatcher,
): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const request = new NodeRequest(
      Date.now() + Math.max(1, timeoutMs),
      timeoutMs,
      maxBytes,
      resolve,
      reject,
      watcher,
    );
    inFlight.add(request);
    watcher?.started(request);
    sweeper ??= setInterval(sweep, SWEEP_MS).unref();
    pool.dispatch(options, request);
  });
}

class NodeRequest implements Dispatcher.DispatchHandler, InFlightAttempt {
  readonly deadline: number;
  /** When the watcher is told the attempt is slow (Infinity: never, or told already). */
  slowAt: number;
  readonly #watcher: AttemptWatcher | undefined;
  readonly #timeoutMs: number;
  readonly #maxBytes: number;
  readonly #resolve: (text: string) => void;
  readonly #reject: (err: Error) => void;
  #controller: Dispatcher.DispatchController | undefined;
  /** Settled (answered, refused or timed out): later events only drain or end the exchange. */
  #done = false;
  #timedOut = false;
  #draining = false;
  #first: Buffer | undefined;
  #chunks: Buffer[] | undefined;
  #size = 0;

  constructor(
    deadline: number,
    timeoutMs: number,
    maxBytes: number,
    resolve: (text: string) => void,
    reject: (err: Error) => void,
    watcher: AttemptWatcher | undefined,
  ) {
    this.deadline = deadline;
    this.#watcher = watcher;
    this.slowAt = watcher ? watcher.slowAt : Number.POSITIVE_INFINITY;
    this.#timeoutMs = timeoutMs;
    this.#maxBytes = maxBytes;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  expire(): void {
    if (this.#done) return;
    this.#timedOut = true;
    this.#fail(this.#timeout());
    // A request still queued for a connection is aborted once it starts (onRequestStart).
    this.#controller?.abort(new Error("attempt timed out"));
  }

  slow(): void {
    this.slowAt = Number.POSITIVE_INFINITY;
    if (!this.#done) this.#watcher?.slow();
  }

  cancel(): void {
    if (this.#done) return;
    this.#fail(CANCELLED);
    this.#controller?.abort(CANCELLED);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    // Timed out or cancelled while queued for a connection.
    if (this.#done) controller.abort(this.#timedOut ? new Error("attempt timed out") : CANCELLED);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    // An informational answer (1xx) comes before the final one, as undici's request() skips it.
    if (this.#done || statusCode < 200) return;
    if (statusCode > 299) {
      this.#draining = true;
      this.#fail(
        new TransportError("http_error", `upstream answered HTTP ${statusCode}`, {
          sent: true,
          status: statusCode,
        }),
      );
      return;
    }
    // Refused before a byte of the body is read when the node declares the size.
    if (Number(headers["content-length"]) > this.#maxBytes) this.#refuse(controller);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#size += chunk.length;
    if (this.#draining) {
      if (this.#size > DRAIN_MAX_BYTES) controller.abort(new Error("refused answer too long to drain"));
      return;
    }
    if (this.#done) return;
    if (this.#size > this.#maxBytes) {
      this.#refuse(controller);
      return;
    }
    if (this.#first === undefined) this.#first = chunk;
    else if (this.#chunks === undefined) this.#chunks = [this.#first, chunk];
    else this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (this.#done) return;
    this.#done = true;
    this.#end();
    const body = this.#chunks ? Buffer.concat(this.#chunks, this.#size) : this.#first;
    this.#resolve(body ? body.toString("utf8") : "");
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
    if (this.#done) return;
    this.#fail(this.#timedOut ? this.#timeout() : transportError(err));
  }

  #timeout(): TransportError {
    return new TransportError("timeout", `no answer within ${this.#timeoutMs} ms`, { sent: true });
  }

  #refuse(controller: Dispatcher.DispatchController): void {
    const err = tooLarge(this.#maxBytes);
    this.#fail(err);
    controller.abort(err);
  }

  #fail(err: Error): void {
    if (this.#done) return;
    this.#done = true;
    this.#first = undefined;
    this.#chunks = undefined;
    this.#end();
    this.#reject(err);
  }

  /** Out of the sweep. */
  #end(): void {
    inFlight.delete(this);
  }
}

function transportError(err: Error): TransportError {
  const code = errorCode(err);
  if (code && NOT_SENT.has(code)) {
    return new TransportError("connect_error", `cannot connect (${code})`, { sent: false });
  }
  return new TransportError("network_error", `connection failed (${code ?? "unknown"})`, { sent: true });
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
