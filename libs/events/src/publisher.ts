import { type JetStreamClient, jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { type Logger, prom, type Registry } from "@tollgate/platform";
import {
  EVENTS,
  type EventOf,
  type EventSubject,
  isCheckedEvent,
  natsSubject,
  parseEvent,
} from "./catalog.ts";
import { keepNatsConnection, redactNatsUrl } from "./connection.ts";
import { counter, gauge } from "./metrics.ts";
import { Outbox, type OutboxEntry } from "./outbox.ts";
import { ensureStreams } from "./streams.ts";

export interface EventPublisherOptions {
  /** e.g. nats://127.0.0.1:4222 */
  natsUrl: string;
  /** The publishing service, used in logs, metrics and the NATS connection name. */
  service: string;
  /** The outbox journal's directory; one directory per process (e.g. .tollgate/outbox/<service>). */
  outboxDir: string;
  logger: Logger;
  registry?: Registry;
  /** Isolates subjects and streams on a shared server (tests); empty in production. */
  namespace?: string;
  /** JetStream replicas for streams this publisher creates (1 single server, 3 cluster). */
  streamReplicas?: number;
  /** How long to wait for one PubAck before the event is retried. */
  publishTimeoutMs?: number;
  /** Publishes awaiting their PubAck at once (pipelining). */
  maxInFlight?: number;
  /** Pause between NATS reconnect attempts. */
  reconnectWaitMs?: number;
  /** How long `close()` keeps delivering before leaving the rest in the journal. */
  closeFlushMs?: number;
}

export interface EventPublisher {
  /**
   * Validates the event against its subject's schema (throws a ZodError when it does not
   * fit: a caller bug; an event as safeParseEvent returned it is not parsed again), writes it
   * to the local outbox and returns. Never waits on NATS and
   * never throws because of it; delivery happens in the background with the event's `id`
   * as the Nats-Msg-Id, so retries and replays are deduplicated by the stream.
   */
  publish<S extends EventSubject>(subject: S, event: EventOf<S>): void;
  /** `publish` for a batch: all are validated first, then journaled with one write. */
  publishMany<S extends EventSubject>(subject: S, events: readonly EventOf<S>[]): void;
  /** Resolves true once every event so far is acknowledged by JetStream, false on timeout. */
  flush(timeoutMs?: number): Promise<boolean>;
  /** Events not yet acknowledged by JetStream (the outbox depth). */
  pending(): number;
  /** Delivers what it can within `closeFlushMs`, then closes; the rest waits in the journal. */
  close(): Promise<void>;
}

/**
 * Durable, non-blocking event publishing: outbox journal on local disk → JetStream with
 * Nats-Msg-Id dedupe. Events survive NATS outages and process restarts; none are lost,
 * and none are stored twice within the stream's duplicate window.
 */
export function createEventPublisher(opts: EventPublisherOptions): EventPublisher {
  const logger = opts.logger.child({ component: "event-publisher" });
  const registry = opts.registry ?? new prom.Registry();
  const namespace = opts.namespace ?? "";
  const timeoutMs = opts.publishTimeoutMs ?? 5_000;
  const maxInFlight = opts.maxInFlight ?? 128;
  const subjects = Object.keys(EVENTS);

  const depth = gauge(
    registry,
    "events_outbox_depth",
    "Events waiting in the local outbox for a JetStream ack",
    ["publisher"],
  );
  const published = counter(registry, "events_published_total", "Events acknowledged by JetStream", [
    "publisher",
    "subject",
  ]);
  const failed = counter(
    registry,
    "events_publish_failures_total",
    "Failed publish attempts (the event stays in the outbox and is retried)",
    ["publisher", "subject"],
  );
  const duplicates = counter(
    registry,
    "events_publish_duplicates_total",
    "Publishes the stream recognised as duplicates (a retry of a stored event)",
    ["publisher", "subject"],
  );
  // At 0 from the start, so rate() and the dashboards see the first failure instead of "no data".
  for (const subject of subjects) failed.inc({ publisher: opts.service, subject }, 0);

  const outbox = new Outbox(opts.outboxDir, logger);
  const inflight = new Set<number>();
  const flushWaiters = new Set<() => void>();
  let closing = false;
  let stopped = false;
  let streamsReady = false;
  let retryAt = 0;
  let consecutiveFailures = 0;
  let lastFailureLog = 0;
  let suppressed = 0;
  let jsFor: { nc: NatsConnection; js: JetStreamClient } | undefined;
  let kickNow: (() => void) | undefined;

  const kick = () => kickNow?.();
  // A publish wakes the pump on the next turn of the event loop, not in a microtask: whatever the
  // caller does after journaling (a gRPC answer) goes out before the NATS write, and the events of
  // one turn leave together.
  let kickQueued = false;
  const kickSoon = () => {
    if (kickQueued) return;
    kickQueued = true;
    setImmediate(() => {
      kickQueued = false;
      kick();
    });
  };
  const updateDepth = () => {
    depth.set({ publisher: opts.service }, outbox.size);
    if (outbox.size === 0) {
      for (const resolve of flushWaiters) resolve();
      flushWaiters.clear();
    }
  };

  const keeper = keepNatsConnection({
    natsUrl: opts.natsUrl,
    name: `${opts.service}-events`,
    logger,
    reconnectWaitMs: opts.reconnectWaitMs ?? 500,
    unreachableMessage: `NATS is unreachable at ${redactNatsUrl(opts.natsUrl)}: events are held locally in ${outbox.dir} until NATS is reachable`,
    onConnect: async (nc) => {
      retryAt = 0;
      consecutiveFailures = 0;
      streamsReady = false;
      await ensureStreams(nc, { namespace, replicas: opts.streamReplicas ?? 1, subjects });
      streamsReady = true;
    },
    onUp: () => kick(),
  });

  const noteFailure = (err: unknown, subject: string | undefined) => {
    if (subject) failed.inc({ publisher: opts.service, subject });
    consecutiveFailures++;
    retryAt = Date.now() + Math.min(100 * 2 ** Math.min(consecutiveFailures, 10), 5_000);
    const message = err instanceof Error ? err.message : String(err);
    // A missing stream (deleted, or JetStream restarted empty) answers "no responders".
    if (/no responders|503|stream not found/i.test(message)) streamsReady = false;
    const now = Date.now();
    if (now - lastFailureLog > 30_000) {
      logger.warn(
        { err: message, pending: outbox.size, suppressed },
        "publishing events to NATS failed; they stay in the outbox and are retried",
      );
      lastFailureLog = now;
      suppressed = 0;
    } else {
      suppressed++;
    }
  };

  const send = (js: JetStreamClient, entry: OutboxEntry) => {
    inflight.add(entry.seq);
    js.publish(natsSubject(entry.subject, namespace), entry.payload, { msgID: entry.id, timeout: timeoutMs })
      .then(
        (ack) => {
          if (stopped) return;
          outbox.ack(entry.seq);
          consecutiveFailures = 0;
          published.inc({ publisher: opts.service, subject: entry.subject });
          if (ack.duplicate) duplicates.inc({ publisher: opts.service, subject: entry.subject });
        },
        (err: unknown) => noteFailure(err, entry.subject),
      )
      .finally(() => {
        inflight.delete(entry.seq);
        if (!stopped) updateDepth();
        kick();
      });
  };

  const pump = async () => {
    while (!stopped) {
      const nc = keeper.current();
      const now = Date.now();
      let waitMs = 1_000;
      if (nc && outbox.size > inflight.size) {
        if (now < retryAt) {
          waitMs = retryAt - now;
        } else if (!streamsReady) {
          try {
            await ensureStreams(nc, { namespace, replicas: opts.streamReplicas ?? 1, subjects });
            streamsReady = true;
            continue;
          } catch (err) {
            noteFailure(err, undefined);
            continue;
          }
        } else {
          if (jsFor?.nc !== nc) jsFor = { nc, js: jetstream(nc) };
          for (const entry of outbox.entries()) {
            if (inflight.size >= maxInFlight) break;
            if (!inflight.has(entry.seq)) send(jsFor.js, entry);
          }
        }
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        kickNow = () => {
          clearTimeout(timer);
          kickNow = undefined;
          resolve();
        };
      });
    }
  };
  const pumping = pump().catch((err: unknown) => logger.error({ err }, "event publisher stopped"));
  updateDepth();

  const flush = (flushTimeoutMs = 5_000) => {
    if (outbox.size === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        flushWaiters.delete(done);
        resolve(false);
      }, flushTimeoutMs);
      flushWaiters.add(done);
    });
  };

  return {
    publish(subject, event) {
      this.publishMany(subject, [event]);
    },
    publishMany(subject, events) {
      if (closing) throw new Error("event publisher is closed");
      const items = events.map((event) => {
        // An event safeParseEvent already checked is not parsed twice.
        const parsed = isCheckedEvent(event) ? event : parseEvent(subject, event);
        return { subject, id: parsed.id, payload: JSON.stringify(parsed) };
      });
      outbox.appendMany(items, true);
      updateDepth();
      kickSoon();
    },
    flush,
    pending: () => outbox.size,
    async close() {
      if (closing) return;
      closing = true;
      if (keeper.current() && outbox.size > 0) await flush(opts.closeFlushMs ?? 2_000);
      stopped = true;
      kick();
      await keeper.close();
      await pumping;
      outbox.close();
      if (outbox.size > 0) {
        logger.info(
          { pending: outbox.size, dir: outbox.dir },
          "events left in the outbox for the next start",
        );
      }
    },
  };
}
