import { prom, type Registry } from "@tollgate/platform";

export interface QuotaMetrics {
  decisions: prom.Counter<"decision" | "metered">;
  failOpen: prom.Counter<"reason">;
  redisLatency: prom.Histogram<"op">;
  snapshotKeys: prom.Gauge;
  refunds: prom.Counter<"result">;
  authorizationsReleased: prom.Counter<"result">;
  usageCounted: prom.Counter<"result">;
  usageRejected: prom.Counter<"reason">;
  /** Units granted in leases, and units given back unused. */
  leaseUnitsGranted: prom.Counter;
  leaseUnitsReturned: prom.Counter;
  /** Credits drawn by calls (USDC atomic units) and credited by top-ups. */
  creditsDrawn: prom.Counter;
  creditsToppedUp: prom.Counter;
  /** Settled top-ups credited from the settlement stream, the gateway's credit call having failed. */
  topUpsRepaired: prom.Counter;
}

/** Every reason Authorize fails open for (see meter.ts). */
const FAIL_OPEN_REASONS = ["unavailable", "cooldown", "timeout", "error"] as const;
export type FailOpenReason = (typeof FAIL_OPEN_REASONS)[number];
/** Every reason ReportUsage refuses a record for (see usage.ts). */
const USAGE_REJECT_REASONS = ["no_request_id", "no_account_id", "invalid_event"] as const;

export function createQuotaMetrics(registry: Registry): QuotaMetrics {
  const metrics: QuotaMetrics = {
    decisions: new prom.Counter({
      name: "quota_authorize_total",
      help: "Authorize decisions, by outcome and whether the call was counted",
      labelNames: ["decision", "metered"],
      registers: [registry],
    }),
    failOpen: new prom.Counter({
      name: "quota_fail_open_total",
      help: "Authorize calls answered without Redis (unreachable or over budget), by reason",
      labelNames: ["reason"],
      registers: [registry],
    }),
    redisLatency: new prom.Histogram({
      name: "quota_redis_seconds",
      help: "Redis round-trip latency of quota-meter's scripts",
      labelNames: ["op"],
      buckets: [0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    }),
    leaseUnitsGranted: new prom.Counter({
      name: "quota_lease_units_granted_total",
      help: "Calls counted in both windows by Authorize (a lease grants several at once)",
      registers: [registry],
    }),
    leaseUnitsReturned: new prom.Counter({
      name: "quota_lease_units_returned_total",
      help: "Lease units the gateways did not use, given back to the windows",
      registers: [registry],
    }),
    creditsDrawn: new prom.Counter({
      name: "quota_credits_drawn_atomic_total",
      help: "Prepaid credits drawn by calls paid from them (USDC atomic units; refunds of unanswered calls not subtracted)",
      registers: [registry],
    }),
    creditsToppedUp: new prom.Counter({
      name: "quota_credits_topped_up_atomic_total",
      help: "Prepaid credits added by settled top-ups (USDC atomic units, once per settlement)",
      registers: [registry],
    }),
    topUpsRepaired: new prom.Counter({
      name: "quota_top_ups_repaired_total",
      help: "Settled top-ups credited from the settlement stream because the gateway's own credit call did not happen",
      registers: [registry],
    }),
    snapshotKeys: new prom.Gauge({
      name: "quota_key_snapshot_keys",
      help: "Keys in the fail-open snapshot",
      registers: [registry],
    }),
    refunds: new prom.Counter({
      name: "quota_refunds_total",
      help: "Refunds of failed calls, by result (applied, duplicate, failed)",
      labelNames: ["result"],
      registers: [registry],
    }),
    authorizationsReleased: new prom.Counter({
      name: "quota_authorizations_released_total",
      help: "Authorize calls the gateways gave up on, released (what they counted given back), by result (applied, duplicate)",
      labelNames: ["result"],
      registers: [registry],
    }),
    usageCounted: new prom.Counter({
      name: "quota_usage_events_total",
      help: "Usage events counted into per-day usage, by result (counted, duplicate)",
      labelNames: ["result"],
      registers: [registry],
    }),
    usageRejected: new prom.Counter({
      name: "quota_usage_records_rejected_total",
      help: "Usage records refused by ReportUsage, by reason (no_request_id, no_account_id, invalid_event)",
      labelNames: ["reason"],
      registers: [registry],
    }),
  };
  // Exported at 0 from the start: a counter born at 1 hides its first increase from rate() and
  // from alerts, and dashboards would show "no data" instead of 0.
  for (const reason of FAIL_OPEN_REASONS) metrics.failOpen.inc({ reason }, 0);
  for (const reason of USAGE_REJECT_REASONS) metrics.usageRejected.inc({ reason }, 0);
  for (const result of ["applied", "duplicate", "failed"]) metrics.refunds.inc({ result }, 0);
  for (const result of ["applied", "duplicate"]) metrics.authorizationsReleased.inc({ result }, 0);
  return metrics;
}
