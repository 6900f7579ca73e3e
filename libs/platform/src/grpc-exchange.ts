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
interface CallStatusShape {
  code: number;
  message: string;
  errorCode: string;
  errorDetail: string;
}

interface Envelope {
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

const announces = (metadata: grpc.Metadata) => metadata.get(EXCHANGE_BATCH_KEY).length > 0;

/**
 * The messages one side writes on a stream within one turn of the event loop, sent as one: the
 * calls a gateway makes for the requests it read in one poll of its sockets, the answers rpc-proxy
 * has for the node answers it read in one. Each grpc-js message costs both sides a frame, a
 * decoder pass and an event; a batch pays them once (docs/benchmarks.md). Flushed on setImmediate:
 * after the I/O of the turn, before the next poll, so no call waits on a timer.
 */
class Coalescer {
  #queue: Envelope[] = [];
  #scheduled = false;
  readonly #write: (message: Envelope) => void;
  readonly #flush = () => {
    this.#scheduled = false;
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
    this.#queue.push(message);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flush);
    }
  }
}

/** Each message of a received envelope: itself, then the ones it carried. */
function eachOf(message: Envelope, receive: (one: Envelope) => void): void {
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
const EXCHANGE_ROTATE_MS = 30_000;
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
const DRAINING = "mesh_draining";

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

/** A call's failure, as the unary call's callback would have seen it (code, details, metadata). */
export interface ExchangeFailure {
  code: grpc.status;
  details: string;
  metadata: grpc.Metadata;
}

function failureOf(status: CallStatusShape): ExchangeFailure {
  const metadata = new grpc.Metadata();
  if (status.errorCode) metadata.set(ERROR_CODE_KEY, status.errorCode);
  if (status.errorDetail) metadata.set(ERROR_DETAIL_KEY, status.errorDetail);
  return { code: status.code, details: status.message, metadata };
}

interface Pending {
  /** Sent once more already, on another stream, after a replica that never ran it let it go. */
  resent: boolean;
  method: string;
  member: string;
  request: unknown;
  deadline: number;
  resolve(value: unknown): void;
  reject(failure: ExchangeFailure): void;
}

interface Stream {
  call: grpc.ClientDuplexStream<Envelope, Envelope>;
  pending: Map<number, Pending>;
  openedAt: number;
  retired: boolean;
  /** Set once the server said it reads batched calls: they go through it. */
  batch: Coalescer | undefined;
}

export interface ExchangeClientOptions {
  /** Opens a stream of the Exchange method with the caller's metadata. */
  open(): grpc.ClientDuplexStream<unknown, unknown>;
  /** The unary call, for a server without Exchange (an older replica during a rollout). */
  unary(method: string, request: unknown, deadlineMs: number): Promise<unknown>;
  /** Streams open at once; each new stream is balanced over the replicas like a unary call. */
  streams?: number;
  /** A stream takes new calls this long, then ends once its calls are answered (rebalancing). */
  rotateMs?: number;
  /** Calls with a longer deadline go unary (the server's connection grace covers no longer ones). */
  callMaxMs?: number;
}

/**
 * The caller's side: calls spread round robin over a few open streams, each answer matched to its
 * call by id. Deadlines are kept by one sweep every 50 ms, not a timer per call. A stream that
 * breaks fails its unanswered calls UNAVAILABLE (the unary call's failure when its replica went
 * away); a server without Exchange gets unary calls for a minute before it is asked again.
 */
export class ExchangeClient {
  readonly #o: Required<ExchangeClientOptions>;
  readonly #streams: (Stream | undefined)[];
  /** Envelope members by method name (a handful: the service's methods). */
  readonly #members = new Map<string, string>();
  /** Every stream not yet over: the slots' and the retired ones still waiting for answers. */
  readonly #live = new Set<Stream>();
  #turn = 0;
  #nextId = 1;
  #unaryUntil = 0;
  #sweep: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: ExchangeClientOptions) {
    this.#o = { streams: 4, rotateMs: EXCHANGE_ROTATE_MS, callMaxMs: EXCHANGE_CALL_MAX_MS, ...options };
    this.#streams = new Array(this.#o.streams).fill(undefined);
  }

  call(method: string, request: unknown, deadlineMs: number): Promise<unknown> {
    const now = Date.now();
    if (this.#closed || now < this.#unaryUntil || deadlineMs > this.#o.callMaxMs)
      return this.#o.unary(method, request, deadlineMs);
    let member = this.#members.get(method);
    if (member === undefined) {
      member = exchangeMember(method);
      this.#members.set(method, member);
    }
    return new Promise((resolve, reject) => {
      this.#send(
        { resent: false, method, member, request, deadline: now + deadlineMs, resolve, reject },
        now,
      );
    });
  }

  #send(pending: Pending, now: number): void {
    const stream = this.#pick(now);
    const id = this.#nextId++;
    stream.pending.set(id, pending);
    const message: Envelope = {
      id,
      timeoutMs: Math.max(1, pending.deadline - now),
      [pending.member]: pending.request,
    };
    if (stream.batch) stream.batch.push(message);
    else stream.call.write(message);
  }

  /** A call its replica never ran (it was draining): sent once more, on a new stream, else failed. */
  #again(pending: Pending, failure: ExchangeFailure): void {
    const now = Date.now();
    if (pending.resent || this.#closed || pending.deadline <= now) {
      pending.reject(failure);
      return;
    }
    pending.resent = true;
    this.#send(pending, now);
  }

  close(): void {
    this.#closed = true;
    if (this.#sweep) clearInterval(this.#sweep);
    for (const stream of this.#live) stream.call.end();
  }

  #pick(now: number): Stream {
    const slot = this.#turn;
    this.#turn = (slot + 1) % this.#streams.length;
    let stream = this.#streams[slot];
    if (stream && now - stream.openedAt >= this.#o.rotateMs) {
      this.#retire(stream);
      stream = undefined;
    }
    if (!stream) {
      stream = this.#open(now);
      this.#streams[slot] = stream;
    }
    return stream;
  }

  #open(now: number): Stream {
    const call = this.#o.open() as grpc.ClientDuplexStream<Envelope, Envelope>;
    const stream: Stream = { call, pending: new Map(), openedAt: now, retired: false, batch: undefined };
    this.#live.add(stream);
    call.on("metadata", (metadata: grpc.Metadata) => {
      if (announces(metadata))
        stream.batch = new Coalescer((message) => {
          if (!call.writableEnded) call.write(message);
        });
    });
    const receive = (message: Envelope) => {
      const pending = stream.pending.get(message.id);
      if (!pending) return; // answered after its deadline passed
      stream.pending.delete(message.id);
      if (message.result === "status" && message.status) {
        if (message.status.errorCode === DRAINING) {
          // The replica is shutting down and never ran it: this stream takes no more calls, and the
          // call goes again on a new one (balanced anew, away from the draining replica).
          this.#retireNow(stream);
          this.#again(pending, failureOf(message.status));
        } else pending.reject(failureOf(message.status));
      } else pending.resolve(message[pending.member]);
      if (stream.retired && stream.pending.size === 0) call.end();
    };
    call.on("data", (message: Envelope) => eachOf(message, receive));
    // The status comes once the stream is over, whichever side ended it or broke it.
    call.on("status", (status: grpc.StatusObject) => this.#ended(stream, status));
    call.on("error", () => undefined); // reported by "status"
    this.#sweep ??= setInterval(() => this.#expire(), 50).unref();
    return stream;
  }

  /** Takes a stream out of its slot at once; it ends once its calls are answered. */
  #retireNow(stream: Stream): void {
    const slot = this.#streams.indexOf(stream);
    if (slot >= 0) this.#streams[slot] = undefined;
    if (!stream.retired) this.#retire(stream);
  }

  #retire(stream: Stream): void {
    stream.retired = true;
    if (stream.pending.size === 0) stream.call.end();
  }

  #ended(stream: Stream, status: grpc.StatusObject): void {
    this.#live.delete(stream);
    // Our half of the stream closes too, or the server's shutdown waits for it.
    stream.call.end();
    const slot = this.#streams.indexOf(stream);
    if (slot >= 0) this.#streams[slot] = undefined;
    const pending = [...stream.pending.values()];
    stream.pending.clear();
    if (status.code === grpc.status.UNIMPLEMENTED) {
      // An older replica: nothing ran; its calls go as unary calls, and so does everything for a minute.
      this.#unaryUntil = Date.now() + 60_000;
      for (const p of pending) {
        this.#o.unary(p.method, p.request, Math.max(1, p.deadline - Date.now())).then(p.resolve, p.reject);
      }
      return;
    }
    // Ended by the server with calls unanswered: it answers every call it runs before it ends a
    // stream (a drain), so these never ran and go again, once, on a new stream.
    if (status.code === grpc.status.OK) {
      const failure = {
        code: grpc.status.UNAVAILABLE,
        details: "the stream ended before the answer",
        metadata: status.metadata,
      };
      for (const p of pending) this.#again(p, failure);
      return;
    }
    // Broken with calls unanswered (the replica went away): UNAVAILABLE, as a unary call whose
    // connection dropped; they may have run, so the caller decides whether to send them again. A
    // refusal of the stream itself (no valid mesh token) is every call's.
    const code = status.code === grpc.status.CANCELLED ? grpc.status.UNAVAILABLE : status.code;
    const details =
      code === status.code ? status.details : `the stream ended before the answer (${status.details})`;
    for (const p of pending) p.reject({ code, details, metadata: status.metadata });
  }

  #expire(): void {
    const now = Date.now();
    for (const stream of this.#live) {
      for (const [id, p] of stream.pending) {
        if (p.deadline > now) continue;
        stream.pending.delete(id);
        p.reject({
          code: grpc.status.DEADLINE_EXCEEDED,
          details: "Deadline exceeded",
          metadata: new grpc.Metadata(),
        });
        // A retired stream whose last call this was ends now, not when its connection does.
        if (stream.retired && stream.pending.size === 0) stream.call.end();
      }
    }
  }
}
