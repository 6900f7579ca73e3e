import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from "@nats-io/jetstream";
import { type NatsConnection, nanos } from "@nats-io/transport-node";
import { natsSubject, STREAMS, type StreamSpec, streamSpecFor } from "./catalog.ts";

export interface EnsureStreamsOptions {
  /** Isolates subjects and stream names (see `natsSubject`); empty in production. */
  namespace?: string;
  /** JetStream replicas per stream: 1 on a single server, 3 on a production cluster. */
  replicas?: number;
  /** Only the streams that store these (logical) subjects; all streams when omitted. */
  subjects?: string[];
}

function isNotFound(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}

function streamConfig(spec: StreamSpec, replicas: number): Partial<StreamConfig> & { name: string } {
  return {
    name: spec.name,
    subjects: spec.subjects,
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_age: nanos(spec.maxAgeMs),
    duplicate_window: nanos(spec.duplicateWindowMs),
    num_replicas: replicas,
  };
}

/**
 * Creates the durable streams, or brings an existing one's mutable settings (subjects,
 * retention age, dedupe window) up to date. Idempotent; every publisher and consumer
 * calls it on connect, so no deploy-time step is needed. Returns the stream names.
 */
export async function ensureStreams(
  nc: NatsConnection | JetStreamManager,
  opts: EnsureStreamsOptions = {},
): Promise<string[]> {
  const jsm = "streams" in nc ? nc : await jetstreamManager(nc);
  const namespace = opts.namespace ?? "";
  const specs = new Map<string, StreamSpec>();
  for (const subject of opts.subjects ?? STREAMS.flatMap((s) => s.subjects)) {
    const spec = streamSpecFor(subject, namespace);
    specs.set(spec.name, spec);
  }
  for (const spec of specs.values()) {
    const wanted = streamConfig(spec, opts.replicas ?? 1);
    try {
      const info = await jsm.streams.info(spec.name);
      const have = info.config;
      const same =
        have.max_age === wanted.max_age &&
        have.duplicate_window === wanted.duplicate_window &&
        have.num_replicas >= (wanted.num_replicas ?? 1) &&
        spec.subjects.every((s) => have.subjects?.includes(s));
      if (!same) {
        await jsm.streams.update(spec.name, {
          subjects: [...new Set([...(have.subjects ?? []), ...spec.subjects])],
          max_age: wanted.max_age,
          duplicate_window: wanted.duplicate_window,
          // A stream made by a publisher of an older release (or with R1) grows to the replicas
          // asked for; never shrinks (another service may ask for more).
          num_replicas: Math.max(have.num_replicas, wanted.num_replicas ?? 1),
        });
      }
    } catch (err) {
      if (!isNotFound(err, JetStreamApiCodes.StreamNotFound)) throw err;
      await jsm.streams.add(wanted);
    }
  }
  return [...specs.keys()];
}

export interface DurableConsumerOptions {
  namespace?: string;
  /** How long the server waits for an ack before redelivering. */
  ackWaitMs?: number;
  /** Unacknowledged messages in flight across all instances of the consumer. */
  maxAckPending?: number;
}

/**
 * Creates (or updates) a durable pull consumer with explicit acks, filtered to one subject.
 * Replicas of a service share the durable, so JetStream spreads the work between them.
 */
export async function ensureDurableConsumer(
  jsm: JetStreamManager,
  subject: string,
  durable: string,
  opts: DurableConsumerOptions = {},
): Promise<string> {
  const spec = streamSpecFor(subject, opts.namespace ?? "");
  const filter = natsSubject(subject, opts.namespace ?? "");
  const config = {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: filter,
    ack_wait: nanos(opts.ackWaitMs ?? 30_000),
    max_ack_pending: opts.maxAckPending ?? 1_000,
    max_deliver: -1,
  };
  try {
    const info = await jsm.consumers.info(spec.name, durable);
    if (info.config.ack_wait !== config.ack_wait || info.config.max_ack_pending !== config.max_ack_pending) {
      await jsm.consumers.update(spec.name, durable, {
        ack_wait: config.ack_wait,
        max_ack_pending: config.max_ack_pending,
      });
    }
  } catch (err) {
    if (!isNotFound(err, JetStreamApiCodes.ConsumerNotFound)) throw err;
    await jsm.consumers.add(spec.name, config);
  }
  return spec.name;
}
