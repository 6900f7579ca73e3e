// Settlement events (tollgate.settlement.v1) through the shared durable publisher: the event is in
// the local outbox journal when publish returns, and reaches JetStream in the background (deduped
// by its id), so a NATS outage delays events but never loses them or slows a settlement.
import {
  createEventPublisher,
  type EventPublisher,
  SETTLEMENT_V1,
  type SettlementEventV1,
} from "@tollgate/events";
import type { Logger, Registry } from "@tollgate/platform";

export type SettlementEvent = SettlementEventV1;
export type SettlementOutcome = SettlementEvent["outcome"];

export interface SettlementEvents {
  /** Records the event durably (local outbox); never throws because NATS is down. */
  publish(event: SettlementEvent): void;
  /** Events not yet acknowledged by JetStream. */
  pending(): number;
  flush(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

export interface SettlementEventsOptions {
  natsUrl: string;
  outboxDir: string;
  logger: Logger;
  registry: Registry;
  /** Isolates subjects and streams on a shared NATS server (tests); empty in production. */
  namespace?: string;
}

export function createSettlementEvents(opts: SettlementEventsOptions): SettlementEvents {
  const publisher: EventPublisher = createEventPublisher({
    natsUrl: opts.natsUrl,
    service: "payment-verifier",
    outboxDir: opts.outboxDir,
    logger: opts.logger,
    registry: opts.registry,
    ...(opts.namespace ? { namespace: opts.namespace } : {}),
  });
  return {
    publish: (event) => publisher.publish(SETTLEMENT_V1, event),
    pending: () => publisher.pending(),
    flush: (timeoutMs) => publisher.flush(timeoutMs),
    close: () => publisher.close(),
  };
}
