// Settlement events (tollgate.settlement.v2) through the shared durable publisher: the event is in
// the local outbox journal when publish returns, and reaches JetStream in the background (deduped
// by its id), so a NATS outage delays events but never loses them or slows a settlement.
import { createEventPublisher, type EventPublisher, SETTLEMENT_V2 } from "@tollgate/events";
import type { Logger, Registry } from "@tollgate/platform";
import type { SettlementSink } from "../core/events.ts";

export interface SettlementEvents extends SettlementSink {
  /** Events not yet acknowledged by JetStream. */
  pending(): number;
  flush(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

export interface SettlementEventsOptions {
  natsUrl: string;
  /** Replicas of the settlement stream if this publisher creates it (NATS_STREAM_REPLICAS). */
  streamReplicas?: number;
  outboxDir: string;
  logger: Logger;
  registry: Registry;
  /** Isolates subjects and streams on a shared NATS server (tests); empty in production. */
  namespace?: string;
}

export function createSettlementEvents(opts: SettlementEventsOptions): SettlementEvents {
  const publisher: EventPublisher = createEventPublisher({
    natsUrl: opts.natsUrl,
    ...(opts.streamReplicas ? { streamReplicas: opts.streamReplicas } : {}),
    service: "payment-verifier",
    outboxDir: opts.outboxDir,
    logger: opts.logger,
    registry: opts.registry,
    ...(opts.namespace ? { namespace: opts.namespace } : {}),
  });
  return {
    publish: (event) => publisher.publish(SETTLEMENT_V2, event),
    pending: () => publisher.pending(),
    flush: (timeoutMs) => publisher.flush(timeoutMs),
    close: () => publisher.close(),
  };
}
