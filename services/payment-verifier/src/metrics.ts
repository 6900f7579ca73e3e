// Payment metrics: latency and outcome of verify and settle by scheme, reservation conflicts
// (replays and concurrent uses of one payment), releases.
import { prom, type Registry } from "@tollgate/platform";

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface PaymentMetrics {
  verifySeconds: prom.Histogram<"scheme" | "outcome">;
  settleSeconds: prom.Histogram<"scheme" | "outcome">;
  reservationConflicts: prom.Counter<"scheme" | "operation">;
  releases: prom.Counter<"scheme">;
}

export function createPaymentMetrics(registry: Registry): PaymentMetrics {
  return {
    verifySeconds: new prom.Histogram({
      name: "payment_verify_seconds",
      help: "Payment verification latency by scheme and outcome (valid, payment_invalid, payment_required, service_unavailable)",
      labelNames: ["scheme", "outcome"],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    settleSeconds: new prom.Histogram({
      name: "payment_settle_seconds",
      help: "Payment settlement latency by scheme and outcome (settled, payment_invalid, service_unavailable)",
      labelNames: ["scheme", "outcome"],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    reservationConflicts: new prom.Counter({
      name: "payment_reservation_conflicts_total",
      help: "Payments refused because they were already reserved or used (replays, concurrent use)",
      labelNames: ["scheme", "operation"],
      registers: [registry],
    }),
    releases: new prom.Counter({
      name: "payment_releases_total",
      help: "Verified payments released unused because the call failed",
      labelNames: ["scheme"],
      registers: [registry],
    }),
  };
}
