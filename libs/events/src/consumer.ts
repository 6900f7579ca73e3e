import { type ConsumerMessages, type JsMsg, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { type Logger, prom, type Registry } from "@tollgate/platform";
import { type EventOf, type EventSubject, parseEvent } from "./catalog.ts";
import { keepNatsConnection, redactNatsUrl } from "./connection.ts";
import { counter, gauge } from "./metrics.ts";
import { ensureDurableConsumer, ensureStreams } from "./streams.ts";

export interface EventConsumerOptions {
  natsUrl: string;
  /** The consuming service, used in logs, metrics and the NATS connection name. */
  service: string;
  logger: Logger;
  registry?: Registry;
  /** Isolates subjects and streams on a shared server (tests); empty in production. */
  namespace?: string;
  /** JetStream replicas for streams this consumer creates when they do not exist yet. */
  streamReplicas?: number;
  reconnectWaitMs?: number;
  /**
   * Log NATS reachability at debug level: for a service whose publisher already logs
   * the one "events are held locally" line.
   */
  quiet?: boolean;
}

interface ConsumeOptions {
  /** How long the server waits for an ack before redelivering (default 30 s). */
  ackWaitMs?: number;
  /** Unacknowledged messages in flight across all replicas (default 1,000). */
  maxAckPending?: number;
  /** Redelivery delay after the handler throws (default 1 s). */
  retryDelayMs?: number;
  /** Messages pulled per request (default 256). */
  batch?: number;
}

export interface DeliveryInfo {
  /** The message's sequence in the stream. */
  streamSeq: number;
  /** 1 on first delivery; more means a redelivery (the handler must be idempotent). */
  deliveryCount: number;
}

/** Handles one validated event. Resolving acks it; throwing naks it for redelivery. */
type EventHandler<S extends EventSubject> = (event: EventOf<S>, info: DeliveryInfo) => Promise<void>;

/** Handles validated events delivered together. Resolving acks them all; throwing naks them all. */
type EventBatchHandler<S extends EventSubject> = (
  events: Array<{ event: EventOf<S>; info: DeliveryInfo }>,
) => Promise<void>;

interface ConsumeBatchOptions extends ConsumeOptions {
  /** At most this many events per handler call (default 256). */
  maxEvents?: number;
  /** A first event waits at most this long for others to join it (default 500 ms). */
  maxWaitMs?: number;
}

export interface EventConsumer {
  /**
   * Consumes `subject` through the durable pull consumer `durable` (created if missing),
   * with explicit acks: each event is acked after `handler` resolves, nak'ed with a delay
   * when it throws, and terminated (never redelivered) when it fails its schema.
   * Delivery is at least once, so handlers are idempotent on `event.id`.
   * Returns at once; the consumer starts (and restarts) whenever NATS is reachable.
   */
  consume<S extends EventSubject>(
    subject: S,
    durable: string,
    handler: EventHandler<S>,
    opts?: ConsumeOptions,
  ): void;
  /**
   * Like `consume`, but hands the handler up to `maxEvents` events at a time, gathered for at most
   * `maxWaitMs`: for a handler whose cost is per call, not per event (one database transaction for
   * many events). The whole group is acked when the handler resolves and redelivered when it throws,
   * so the handler must be idempotent per event id, as with `consume`.
   */
  consumeBatches<S extends EventSubject>(
    subject: S,
    durable: string,
    handler: EventBatchHandler<S>,
    opts?: ConsumeBatchOptions,
  ): void;
  close(): Promise<void>;
}

export function createEventConsumer(opts: EventConsumerOptions): EventConsumer {
  const logger = opts.logger.child({ component: "event-consumer" });
  const registry = opts.registry ?? new prom.Registry();
  const namespace = opts.namespace ?? "";
  const consumed = counter(
    registry,
    "events_consumed_total",
    "Events handled, by result (ok, retry, invalid)",
    ["consumer", "subject", "result"],
  );
  const pending = gauge(
    registry,
    "events_consumer_pending",
    "Events in the stream not yet delivered to the durable consumer (its lag), as of the last delivery",
    ["consumer", "subject"],
  );
  const keeper = keepNatsConnection({
    natsUrl: opts.natsUrl,
    name: `${opts.service}-consumer`,
    logger,
    reconnectWaitMs: opts.reconnectWaitMs ?? 500,
    unreachableMessage: `NATS is unreachable at ${redactNatsUrl(opts.natsUrl)}: events will be consumed once NATS is reachable`,
    quiet: opts.quiet ?? false,
  });
  let closed = false;
  const running = new Set<ConsumerMessages>();
  const loops: Promise<void>[] = [];

  /** The message's event, or undefined (terminated) when it fails its schema. */
  function parsed<S extends EventSubject>(subject: S, durable: string, m: JsMsg): EventOf<S> | undefined {
    pending.set({ consumer: durable, subject }, m.info.pending);
    try {
      return parseEvent(subject, m.json());
    } catch (err) {
      // A payload that fails its schema will never pass: stop redelivering it.
      logger.error({ err, subject, seq: m.seq }, "event does not match its schema; terminated");
      // No reason text: servers before 2.10.4 ignore a TERM that carries one.
      m.term();
      consumed.inc({ consumer: durable, subject, result: "invalid" });
      return undefined;
    }
  }

  /** Acks every message once `handled` resolves; naks them all for redelivery when it throws. */
  async function settle(
    subject: string,
    durable: string,
    messages: readonly JsMsg[],
    handled: Promise<void>,
    retryDelayMs: number,
    warn: (err: unknown, msg: string) => void,
  ) {
    try {
      await handled;
      for (const m of messages) m.ack();
      consumed.inc({ consumer: durable, subject, result: "ok" }, messages.length);
    } catch (err) {
      for (const m of messages) m.nak(retryDelayMs);
      consumed.inc({ consumer: durable, subject, result: "retry" }, messages.length);
      warn(err, "event handler failed; the event will be redelivered");
    }
  }

  const info = (m: JsMsg): DeliveryInfo => ({ streamSeq: m.seq, deliveryCount: m.info.deliveryCount });

  /** Delivers messages to the handler one at a time. */
  function oneByOne<S extends EventSubject>(subject: S, durable: string, handler: EventHandler<S>) {
    return async (m: JsMsg, retryDelayMs: number, warn: (err: unknown, msg: string) => void) => {
      const event = parsed(subject, durable, m);
      if (event === undefined) return;
      await settle(subject, durable, [m], handler(event, info(m)), retryDelayMs, warn);
    };
  }

  /**
   * Gathers messages into groups of at most `maxEvents`, each waiting at most `maxWaitMs` for the
   * group to fill, and hands each group to the handler; the next message waits while a full group
   * is being handled, so the consumer never runs ahead of the handler.
   */
  function grouped<S extends EventSubject>(
    subject: S,
    durable: string,
    handler: EventBatchHandler<S>,
    maxEvents: number,
    maxWaitMs: number,
  ) {
    let group: Array<{ m: JsMsg; event: EventOf<S> }> = [];
    let timer: NodeJS.Timeout | undefined;
    let tail: Promise<void> = Promise.resolve();
    const flush = (retryDelayMs: number, warn: (err: unknown, msg: string) => void) => {
      clearTimeout(timer);
      timer = undefined;
      const taken = group;
      group = [];
      if (taken.length === 0) return tail;
      tail = tail.then(() =>
        settle(
          subject,
          durable,
          taken.map((t) => t.m),
          Promise.resolve().then(() => handler(taken.map((t) => ({ event: t.event, info: info(t.m) })))),
          retryDelayMs,
          warn,
        ),
      );
      return tail;
    };
    return async (m: JsMsg, retryDelayMs: number, warn: (err: unknown, msg: string) => void) => {
      const event = parsed(subject, durable, m);
      if (event === undefined) return;
      group.push({ m, event });
      if (group.length >= maxEvents) await flush(retryDelayMs, warn);
      else timer ??= setTimeout(() => void flush(retryDelayMs, warn), maxWaitMs);
    };
  }

  async function run<S extends EventSubject>(
    subject: S,
    durable: string,
    deliver: (m: JsMsg, retryDelayMs: number, warn: (err: unknown, msg: string) => void) => Promise<void>,
    copts: ConsumeOptions,
  ) {
    let lastLog = 0;
    const warn = (err: unknown, msg: string) => {
      if (Date.now() - lastLog < 30_000) return;
      lastLog = Date.now();
      logger.warn({ err: err instanceof Error ? err.message : String(err), subject, durable }, msg);
    };
    while (!closed) {
      let messages: ConsumerMessages | undefined;
      try {
        const nc = await keeper.ready();
        const jsm = await jetstreamManager(nc);
        await ensureStreams(jsm, { namespace, replicas: opts.streamReplicas ?? 1, subjects: [subject] });
        const stream = await ensureDurableConsumer(jsm, subject, durable, {
          namespace,
          ...(copts.ackWaitMs === undefined ? {} : { ackWaitMs: copts.ackWaitMs }),
          ...(copts.maxAckPending === undefined ? {} : { maxAckPending: copts.maxAckPending }),
        });
        const consumer = await jetstream(nc).consumers.get(stream, durable);
        messages = await consumer.consume({ max_messages: copts.batch ?? 256 });
        running.add(messages);
        // A durable deleted under us (an operator replaying the stream from its start) or a stream
        // recreated: end this iteration, so the loop recreates the durable instead of waiting forever.
        const watched = messages;
        void (async () => {
          for await (const s of watched.status()) {
            if (
              s.type === "consumer_deleted" ||
              s.type === "consumer_not_found" ||
              s.type === "stream_not_found"
            ) {
              watched.stop();
              return;
            }
          }
        })().catch(() => undefined);
        for await (const m of messages) {
          await deliver(m, copts.retryDelayMs ?? 1_000, warn);
        }
      } catch (err) {
        if (closed) break;
        warn(err, "event consumer interrupted; restarting");
      } finally {
        if (messages) running.delete(messages);
      }
      if (!closed) await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }

  return {
    consume(subject, durable, handler, copts = {}) {
      if (closed) throw new Error("event consumer is closed");
      loops.push(run(subject, durable, oneByOne(subject, durable, handler), copts));
    },
    consumeBatches(subject, durable, handler, copts = {}) {
      if (closed) throw new Error("event consumer is closed");
      const maxEvents = copts.maxEvents ?? 256;
      const deliver = grouped(subject, durable, handler, maxEvents, copts.maxWaitMs ?? 500);
      // Every message of a full group is pulled before the group is handled.
      loops.push(
        run(subject, durable, deliver, { ...copts, batch: Math.max(copts.batch ?? 256, maxEvents) }),
      );
    },
    async close() {
      closed = true;
      for (const messages of running) messages.stop();
      await keeper.close();
      await Promise.all(loops);
    },
  };
}
