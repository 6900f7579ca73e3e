// The caller's side of an Exchange (grpc-exchange.ts has the envelope, its batches and the server's
// side): unary calls sent as messages on a few open streams, each answer matched to its call by id.
import * as grpc from "@grpc/grpc-js";
import {
  announces,
  type CallStatusShape,
  Coalescer,
  DRAINING,
  type Envelope,
  EXCHANGE_CALL_MAX_MS,
  EXCHANGE_ROTATE_MS,
  eachOf,
  exchangeMember,
} from "./grpc-exchange.ts";
import { ERROR_CODE_KEY, ERROR_DETAIL_KEY } from "./grpc-metadata.ts";

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
