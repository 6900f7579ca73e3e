// Unary calls carried as messages on long-lived bidirectional streams: a service's `Exchange`
// method (payment-verifier's and rpc-proxy's). In grpc-js a unary call opens an HTTP/2 stream, sends headers,
// a message and trailers each way and builds a call object on each side: on loopback here about
// 0.6 ms and 0.6 ms of the caller's CPU, against 0.13 ms and 0.11 ms for a message on an open
// stream. The answers are the unary methods' own: the same handlers run, and a failure carries the
// status and catalog error a unary call would have ended with. The calls (answers) one side has in
// one turn of its event loop go in one message (Coalescer), to a side that announced it reads them.
//
// The envelope's convention is written once, in proto/tollgate/mesh/v1/exchange.proto.
import * as grpc from "@grpc/grpc-js";
import { ERROR_CODE_KEY, ERROR_DETAIL_KEY } from "./grpc-metadata.ts";

/** A failed call as a unary call ends: status, message and the catalog error trailers. */
export interface CallStatusShape {
  code: number;
  message: string;
  errorCode: string;
  errorDetail: string;
}

export interface Envelope {
  id: number;
  timeoutMs?: number;
  call?: string;
  result?: string;
  status?: CallStatusShape | null;
  /** Calls (answers) sent in the same message (exchange.proto). */
  more?: Envelope[];
  [member: string]: unknown;
}

/** The metadata key by which each side of an Exchange says it reads batched messages (exchange.proto). */
export const EXCHANGE_BATCH_KEY = "tollgate-exchange-batch";

export const announces = (metadata: grpc.Metadata) => metadata.get(EXCHANGE_BATCH_KEY).length > 0;

/**
 * The messages one side writes on a stream within one turn of the event loop, sent in at most two:
 * the first at once (a lone call waits for nothing), the rest of the turn's together on
 * setImmediate (after the turn's I/O, before the next poll; no timer). Under load those are the
 * calls a gateway makes for the requests it read in one poll of its sockets, the answers rpc-proxy
 * has for the node answers it read in one. Each grpc-js message costs both sides a frame, a decoder
 * pass and an event; a batch pays them once (docs/benchmarks.md).
 */
export class Coalescer {
  #queue: Envelope[] = [];
  /** A message went out this turn: the next ones wait for the flush. */
  #turn = false;
  readonly #write: (message: Envelope) => void;
  readonly #flush = () => {
    this.#turn = false;
    const queue = this.#queue;
    if (queue.length === 0) return;
    this.#queue = [];
    const first = queue[0] as Envelope;
    if (queue.length > 1) first.more = queue.slice(1);
    this.#write(first);
  };

  constructor(write: (message: Envelope) => void) {
    this.#write = write;
  }

  push(message: Envelope): void {
    if (this.#turn) {
      this.#queue.push(message);
      return;
    }
    this.#turn = true;
    setImmediate(this.#flush);
    this.#write(message);
  }
}

/** Each message of a received envelope: itself, then the ones it carried. */
export function eachOf(message: Envelope, receive: (one: Envelope) => void): void {
  receive(message);
  const more = message.more;
  if (more) for (const one of more) receive(one);
}

/** `Verify` → `verify`: the envelope member a method's messages travel in. */
export const exchangeMember = (method: string) => method.charAt(0).toLowerCase() + method.slice(1);

type Handler = (
  request: unknown,
  call: { getDeadline(): number; metadata: grpc.Metadata },
) => Promise<unknown>;

/** A service's handlers by envelope member (`verify` → Verify's), built once per service. */
export function exchangeHandlers(
  handlers: Record<string, Handler>,
): ReadonlyMap<string, { method: string; handler: Handler }> {
  return new Map(
    Object.entries(handlers).map(([method, handler]) => [exchangeMember(method), { method, handler }]),
  );
}

/** What the server side needs from the service it belongs to (startGrpcServer provides it). */
export interface ExchangeServerContext {
  /** The service's unary handlers by envelope member (exchangeHandlers). */
  handlers: ReadonlyMap<string, { method: string; handler: Handler }>;
  /** Whether the stream's caller may call `method` (the mesh policy; the stream's token was checked at its start). */
  allowed(method: string): boolean;
  /** Counts a call refused by the policy, as a refused unary call is, and gives its status. */
  refuse(method: string): { code: number; details: string; metadata: grpc.Metadata };
  /** A handler's failure as the status a unary call would end with. */
  statusOf(err: unknown, method: string): { code: number; details: string; metadata: grpc.Metadata };
  observe(method: string, code: string, seconds: number): void;
}

/**
 * How long a caller's Exchange stream takes new calls (then it ends once they are answered: calls
 * spread anew over the replicas), and the longest deadline a call carried on one may have (a longer
 * one goes as a unary call).
 */
export const EXCHANGE_ROTATE_MS = 30_000;
export const EXCHANGE_CALL_MAX_MS = 60_000;

/**
 * The grace a server gives a connection it ends for its age (grpc.max_connection_age_grace_ms):
 * every stream still open on it then breaks and fails its calls, calls that may have run (a Settle
 * that collected). A stream opened just before the server's notice takes calls for `rotateMs` more,
 * each of which may run to its deadline: the grace outlasts both, so no call is cut short by it.
 */
export const connectionGraceMs = (
  rotateMs = EXCHANGE_ROTATE_MS,
  callMaxMs = EXCHANGE_CALL_MAX_MS,
  marginMs = 5_000,
) => rotateMs + callMaxMs + marginMs;

/** The refusal of a call by a draining server: its handler never ran, so the caller sends it again. */
export const DRAINING = "mesh_draining";

function callStatus(code: number, message: string, metadata?: grpc.Metadata): CallStatusShape {
  const errorCode = metadata?.get(ERROR_CODE_KEY)[0];
  const errorDetail = metadata?.get(ERROR_DETAIL_KEY)[0];
  return {
    code,
    message,
    errorCode: typeof errorCode === "string" ? errorCode : "",
    errorDetail: typeof errorDetail === "string" ? errorDetail : "",
  };
}

/** The open Exchange streams of one server, so a shutdown can end them once their calls are answered. */
export class ExchangeStreams {
  readonly #open = new Set<() => void>();
  #draining = false;

  get draining(): boolean {
    return this.#draining;
  }

  add(drain: () => void): () => void {
    this.#open.add(drain);
    if (this.#draining) drain();
    return () => this.#open.delete(drain);
  }

  /** From now on, every stream ends as soon as its calls are answered; new calls on it are refused UNAVAILABLE. */
  drain(): void {
    this.#draining = true;
    for (const drain of this.#open) drain();
  }
}

/**
 * One call carried on a stream: what its handler sees as its `call` (the deadline and the stream's
 * metadata, all that the handlers of a service with an Exchange read from it), one object per
 * message instead of a stand-in and closures.
 */
class CarriedCall {
  readonly metadata: grpc.Metadata;
  readonly #deadline: number;
  constructor(metadata: grpc.Metadata, deadline: number) {
    this.metadata = metadata;
    this.#deadline = deadline;
  }
  getDeadline(): number {
    return this.#deadline;
  }
}

/** The state of one served stream, shared by its messages. */
class ServedStream {
  readonly call: grpc.ServerDuplexStream<Envelope, Envelope>;
  readonly ctx: ExchangeServerContext;
  readonly streams: ExchangeStreams;
  readonly forget: () => void;
  /** Set when the caller reads batched answers: they go through it. */
  readonly batch: Coalescer | undefined;
  inFlight = 0;
  ending = false;
  closed = false;

  constructor(
    call: grpc.ServerDuplexStream<Envelope, Envelope>,
    ctx: ExchangeServerContext,
    streams: ExchangeStreams,
  ) {
    this.call = call;
    this.ctx = ctx;
    this.streams = streams;
    this.batch = announces(call.metadata)
      ? new Coalescer((message) => {
          if (!this.closed) this.call.write(message);
        })
      : undefined;
    this.forget = streams.add(() => {
      this.ending = true;
      this.finish();
    });
  }

  finish(): void {
    if (this.ending && this.inFlight === 0 && !this.closed) {
      if (this.batch) {
        // The last answers may still wait for their batch: end once it is written.
        setImmediate(() => this.end());
        return;
      }
      this.end();
    }
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.forget();
    this.call.end();
  }

  answer(message: Envelope): void {
    if (this.closed) return;
    if (this.batch) this.batch.push(message);
    else this.call.write(message);
  }

  fail(
    id: number,
    method: string,
    started: number,
    code: grpc.status,
    details: string,
    metadata?: grpc.Metadata,
  ) {
    this.ctx.observe(
      method || "unknown",
      grpc.status[code] ?? "UNKNOWN",
      (performance.now() - started) / 1000,
    );
    this.answer({ id, status: callStatus(code, details, metadata) });
  }

  receive(message: Envelope): void {
    const started = performance.now();
    const id = message.id;
    const member = message.call;
    const carried = member ? this.ctx.handlers.get(member) : undefined;
    if (!member || !carried) {
      this.fail(id, "", started, grpc.status.UNIMPLEMENTED, `no method ${member ?? "(none)"} on this stream`);
      return;
    }
    const method = carried.method;
    if (!this.ctx.allowed(method)) {
      const refused = this.ctx.refuse(method);
      this.fail(id, method, started, refused.code, refused.details, refused.metadata);
      return;
    }
    // A draining service takes no new call: the caller sends it again, to another replica.
    if (this.streams.draining) {
      const metadata = new grpc.Metadata();
      metadata.set(ERROR_CODE_KEY, DRAINING);
      this.fail(id, method, started, grpc.status.UNAVAILABLE, "the service is shutting down", metadata);
      return;
    }
    this.inFlight++;
    void this.run(id, member, carried, message[member], started, Date.now() + (message.timeoutMs || 30_000));
  }

  async run(
    id: number,
    member: string,
    carried: { method: string; handler: Handler },
    request: unknown,
    started: number,
    deadline: number,
  ): Promise<void> {
    let response: unknown;
    try {
      response = await carried.handler(request, new CarriedCall(this.call.metadata, deadline));
    } catch (err) {
      this.inFlight--;
      const status = this.ctx.statusOf(err, carried.method);
      this.fail(id, carried.method, started, status.code, status.details, status.metadata);
      this.finish();
      return;
    }
    this.inFlight--;
    this.ctx.observe(carried.method, "OK", (performance.now() - started) / 1000);
    this.answer({ id, [member]: response });
    this.finish();
  }
}

/**
 * Serves one Exchange stream: each message runs its method's unary handler (concurrently with the
 * others), its answer goes back with its id. The stream ends when the caller ends it, or, once the
 * server drains, when its calls are answered.
 */
export function serveExchange(
  call: grpc.ServerDuplexStream<Envelope, Envelope>,
  ctx: ExchangeServerContext,
  streams: ExchangeStreams,
): void {
  const served = new ServedStream(call, ctx, streams);
  // Says, in the stream's initial metadata, that this server reads batched calls.
  const metadata = new grpc.Metadata();
  metadata.set(EXCHANGE_BATCH_KEY, "1");
  call.sendMetadata(metadata);
  const receive = (one: Envelope) => served.receive(one);
  call.on("data", (message: Envelope) => eachOf(message, receive));
  call.on("end", () => {
    served.ending = true;
    served.finish();
  });
  const gone = () => {
    served.closed = true;
    served.forget();
  };
  call.on("cancelled", gone);
  call.on("error", gone);
}
