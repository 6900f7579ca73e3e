export {
  EVENTS,
  type EventOf,
  type EventSubject,
  isEventSubject,
  natsSubject,
  parseEvent,
  STREAMS,
  type StreamSpec,
  streamSpecFor,
} from "./catalog.ts";
export {
  type ConsumeBatchOptions,
  type ConsumeOptions,
  createEventConsumer,
  type DeliveryInfo,
  type EventBatchHandler,
  type EventConsumer,
  type EventConsumerOptions,
  type EventHandler,
} from "./consumer.ts";
export { createEventPublisher, type EventPublisher, type EventPublisherOptions } from "./publisher.ts";
export { SETTLEMENT_V1, type SettlementEventV1, settlementEventV1 } from "./settlement.v1.ts";
export { SETTLEMENT_V2, type SettlementEventV2, settlementEventV2 } from "./settlement.v2.ts";
export {
  type DurableConsumerOptions,
  type EnsureStreamsOptions,
  ensureDurableConsumer,
  ensureStreams,
} from "./streams.ts";
export { USAGE_V1, type UsageEventV1, usageEventV1 } from "./usage.v1.ts";
export { USAGE_BATCH_MAX, USAGE_V2, type UsageBatchV2, type UsageCallV2, usageBatchV2 } from "./usage.v2.ts";
