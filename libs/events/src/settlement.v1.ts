import { z } from "zod";

/** Subject of the settlement events; the version is part of the name, never of the payload. */
export const SETTLEMENT_V1 = "tollgate.settlement.v1";

/**
 * The outcome of one paid call's settlement. `id` is the JetStream message id and the
 * consumers' idempotency key: one id per settlement outcome (e.g. the request id, or the
 * request id plus the outcome when a call can both fail and be released).
 */
export const settlementEventV1 = z.object({
  id: z.string().min(1).max(200),
  request_id: z.string().min(1).max(200),
  endpoint: z.string().min(1).max(300),
  network: z.string().max(100),
  /** Payment scheme, e.g. "exact", "x402-batch", "mpp-charge", "mpp-session". */
  scheme: z.string().min(1).max(100),
  payer: z.string().min(1).max(200),
  /** Amount in the asset's atomic units, as a decimal string (no float rounding). */
  amount: z.string().regex(/^[0-9]+$/, "amount must be a decimal string of atomic units"),
  asset: z.string().min(1).max(200),
  payment_network: z.string().min(1).max(100),
  transaction: z.string().max(200).nullable(),
  outcome: z.enum(["settled", "failed", "released"]),
  reason: z.string().max(1000).nullable(),
  time: z.iso.datetime({ offset: true }),
});

export type SettlementEventV1 = z.infer<typeof settlementEventV1>;
