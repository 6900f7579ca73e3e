export { natsSubject, parseEvent, STREAMS, safeParseEvent, streamSpecFor } from "./catalog.ts";
export { createEventConsumer, type DeliveryInfo, type EventConsumer } from "./consumer.ts";
export { createEventPublisher, type EventPublisher } from "./publisher.ts";
export { SETTLEMENT_V1, type SettlementEventV1 } from "./settlement.v1.ts";
export { SETTLEMENT_V2, type SettlementEventV2, settlementEventV2 } from "./settlement.v2.ts";
export { ensureStreams } from "./streams.ts";
export { USAGE_V1, type UsageEventV1 } from "./usage.v1.ts";
export { USAGE_BATCH_MAX, USAGE_V2, type UsageBatchV2, type UsageCallV2 } from "./usage.v2.ts";
