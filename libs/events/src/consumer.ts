import { type ConsumerMessages, type JsMsg, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { type Logger, prom, type Registry, redactUrl } from "@tollgate/platform";
import { type EventOf, type EventSubject, parseEvent } from "./catalog.ts";
import { keepNatsConnection } from "./connection.ts";
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

export interface ConsumeOptions {
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
export type EventHandler<S extends EventSubject> = (event: EventOf<S>, info: DeliveryInfo) => Promise<void>;

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
    unreachableMessage: `NATS is unreachable at ${redactUrl(opts.natsUrl)}: events will be consumed once NATS is reachable`,
    quiet: opts.quiet ?? false,
  });
  let closed = false;
  const running = new Set<ConsumerMessages>();
  const loops: Promise<void>[] = [];

  async function handleOne<S extends EventSubject>(
    subject: S,
    durable: string,
    handler: EventHandler<S>,
    m: JsMsg,
    retryDelayMs: number,
    warn: (err: unknown, msg: string) => void,
  ) {
    pending.set({ consumer: durable, subject }, m.info.pending);
    let event: EventOf<S>;
    try {
      event = parseEvent(subject, m.json());
    } catch (err) {
      // A payload that fails its schema will never pass: stop redelivering it.
      logger.error({ err, subject, seq: m.seq }, "event does not match its schema; terminated");
      // No reason text: servers before 2.10.4 ignore a TERM that carries one.
      m.term();
      consumed.inc({ consumer: durable, subject, result: "invalid" });
      return;
    }
    try {
      await handler(event, { streamSeq: m.seq, deliveryCount: m.info.deliveryCount });
      m.ack();
      consumed.inc({ consumer: durable, subject, result: "ok" });
    } catch (err) {
      m.nak(retryDelayMs);
      consumed.inc({ consumer: durable, subject, result: "retry" });
      warn(err, "event handler failed; the event will be redelivered");
    }
  }

  async function run<S extends EventSubject>(
    subject: S,
    durable: string,
    handler: EventHandler<S>,
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
          await handleOne(subject, durable, handler, m, copts.retryDelayMs ?? 1_000, warn);
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
      loops.push(run(subject, durable, handler, copts));
    },
    async close() {
      closed = true;
      for (const messages of running) messages.stop();
      await keeper.close();
      await Promise.all(loops);
    },
  };
}
