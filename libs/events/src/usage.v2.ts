import { z } from "zod";
import { usageEventV1 } from "./usage.v1.ts";

/** Subject of the usage events, version 2: one message per batch of calls. */
export const USAGE_V2 = "tollgate.usage.v2";

/** The most calls one batch carries (the gateway reports in batches of at most this many). */
export const USAGE_BATCH_MAX = 1_000;

/**
 * A batch of finished API-key calls, as one message: one publish, one delivery, one fold and one
 * ack for all of them, where v1 spent one of each per call. `id` is the batch id the gateway
 * generated when it formed the batch and keeps when it resends it, so a resent batch is stored
 * once (the JetStream message id) and counted once (the consumers' idempotency key). Each call
 * keeps the gateway's request id; none carries the API key, only its id. `counted` (added
 * compatibly: absent in batches written before it) says the call stayed counted in the account's
 * quota windows (metered and not refunded): the windows are rebuilt from it after a Redis loss.
 * `credits` (added compatibly too) is what an answered call drew from the account's prepaid
 * credits (USDC atomic units; absent or 0 for a call on the plan or refunded), and `credits_epoch`
 * the hot copy's generation it was drawn in: quota-meter's ledger records the batch's draws once.
 * `key_id` is empty for a call made without a key (a wallet signed in with sign-in-with-x, served
 * on its account): a widening, so a consumer of an older release drops such calls alone.
 */
export const usageBatchV2 = z.object({
  id: z.string().min(1).max(200),
  calls: z
    .array(
      usageEventV1.omit({ id: true }).extend({
        key_id: z.string().max(100),
        counted: z.boolean().optional(),
        credits: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
        credits_epoch: z.string().max(200).optional(),
      }),
    )
    .min(1)
    .max(USAGE_BATCH_MAX),
});

export type UsageBatchV2 = z.infer<typeof usageBatchV2>;
export type UsageCallV2 = UsageBatchV2["calls"][number];
