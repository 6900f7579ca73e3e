import { z } from "zod";

/** Subject of the usage events; the version is part of the name, never of the payload. */
export const USAGE_V1 = "tollgate.usage.v1";

/**
 * One metered API-key call, published when the gateway reports it finished. `id` is the
 * request id: it is the JetStream message id (publish dedupe) and the consumers'
 * idempotency key. Never carries the API key itself, only its id.
 */
export const usageEventV1 = z.object({
  id: z.string().min(1).max(200),
  request_id: z.string().min(1).max(200),
  account_id: z.string().min(1).max(100),
  key_id: z.string().min(1).max(100),
  endpoint: z.string().min(1).max(300),
  network: z.string().max(100),
  status: z.number().int().min(0).max(999),
  latency_ms: z.number().min(0),
  time: z.iso.datetime({ offset: true }),
});

export type UsageEventV1 = z.infer<typeof usageEventV1>;
