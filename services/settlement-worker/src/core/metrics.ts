import { prom, type Registry } from "@tollgate/platform";

export interface WorkerMetrics {
  ledgerEvents: prom.Counter<"outcome" | "result">;
  reconcileDifferences: prom.Counter<"kind">;
  /** MPP session channels settled on schedule (reason: amount, age, close_requested; error when failed). */
  sessionSettles: prom.Counter<"reason" | "result">;
  /** 1 while this replica holds the session settlement lease. */
  sessionLeaseHeld: prom.Gauge;
  /** x402-batch claim transactions (reason: withdrawal, amount, interval). */
  batchClaims: prom.Counter<"reason">;
  /** Vouchers claimed on chain (one per channel per claim). */
  batchClaimedVouchers: prom.Counter;
  batchSettles: prom.Counter;
  batchRefunds: prom.Counter<"reason">;
  /** Gas our x402-batch refund transactions used, and their fees in wei (reason: requested, idle). */
  batchRefundGas: prom.Counter<"reason">;
  batchRefundFees: prom.Counter<"reason">;
  batchReconciled: prom.Counter;
  /** Failed claim, settle, refund or whole passes. */
  batchFailures: prom.Counter<"operation">;
  /** Accepted but unclaimed x402-batch charges, atomic units, as the lease holder last saw them. */
  batchUnclaimed: prom.Gauge;
  /** Channels whose charges wait for a deposit to confirm on chain. */
  batchUnconfirmed: prom.Gauge;
  /** 1 while this replica holds the x402-batch claim lease. */
  batchLeaseHeld: prom.Gauge;
}

export function createWorkerMetrics(registry: Registry): WorkerMetrics {
  const metrics: WorkerMetrics = {
    ledgerEvents: new prom.Counter({
      name: "settlement_ledger_events_total",
      help: "Settlement events written to the ledger, by outcome and result (recorded, duplicate; for released calls also over_bound: past the payer's samples for the hour, only counted here, and expired: older than the retention)",
      labelNames: ["outcome", "result"],
      registers: [registry],
    }),
    reconcileDifferences: new prom.Counter({
      name: "settlement_reconcile_differences_total",
      help: "Differences reconciliation found between the ledger and the settlement chain, by kind",
      labelNames: ["kind"],
      registers: [registry],
    }),
    sessionSettles: new prom.Counter({
      name: "settlement_session_settles_total",
      help: "MPP session channels settled on chain by the schedule, by reason (amount, age, close_requested) and result (settled, failed)",
      labelNames: ["reason", "result"],
      registers: [registry],
    }),
    sessionLeaseHeld: new prom.Gauge({
      name: "settlement_session_lease_held",
      help: "1 while this replica holds the lease to settle MPP session channels (exactly one replica should)",
      registers: [registry],
    }),
    batchClaims: new prom.Counter({
      name: "settlement_x402_batch_claims_total",
      help: "x402-batch claimWithSignature transactions, by reason (withdrawal, amount, interval)",
      labelNames: ["reason"],
      registers: [registry],
    }),
    batchClaimedVouchers: new prom.Counter({
      name: "settlement_x402_batch_claimed_vouchers_total",
      help: "x402-batch vouchers claimed on chain (one per channel per claim transaction)",
      registers: [registry],
    }),
    batchSettles: new prom.Counter({
      name: "settlement_x402_batch_settles_total",
      help: "x402-batch settle(receiver, token) transactions",
      registers: [registry],
    }),
    batchRefunds: new prom.Counter({
      name: "settlement_x402_batch_refunds_total",
      help: "x402-batch channels refunded cooperatively, by reason: requested by the payer, or idle",
      labelNames: ["reason"],
      registers: [registry],
    }),
    batchRefundGas: new prom.Counter({
      name: "settlement_x402_batch_refund_gas_total",
      help: "Gas used by x402-batch refund transactions (Tollgate pays it), by reason: requested by the payer, or idle",
      labelNames: ["reason"],
      registers: [registry],
    }),
    batchRefundFees: new prom.Counter({
      name: "settlement_x402_batch_refund_fees_wei_total",
      help: "Fees paid for x402-batch refund transactions (gas used x effective gas price), wei of the settlement chain's native coin, by reason",
      labelNames: ["reason"],
      registers: [registry],
    }),
    batchReconciled: new prom.Counter({
      name: "settlement_x402_batch_reconciled_events_total",
      help: "x402-batch settlement events journaled from the chain's logs for an operation left open (a crash or failure between a transaction and its event)",
      registers: [registry],
    }),
    batchFailures: new prom.Counter({
      name: "settlement_x402_batch_failures_total",
      help: "x402-batch operations that failed (claim, settle, refund, pass); retried on the next pass",
      labelNames: ["operation"],
      registers: [registry],
    }),
    batchUnclaimed: new prom.Gauge({
      name: "settlement_x402_batch_unclaimed_atomic",
      help: "x402-batch charges accepted but not yet claimed on chain, atomic units of the asset (lease holder)",
      registers: [registry],
    }),
    batchUnconfirmed: new prom.Gauge({
      name: "settlement_x402_batch_unconfirmed_channels",
      help: "x402-batch channels whose charges exceed their confirmed on-chain balance (left out of claims)",
      registers: [registry],
    }),
    batchLeaseHeld: new prom.Gauge({
      name: "settlement_x402_batch_lease_held",
      help: "1 while this replica holds the lease to claim x402-batch channels (exactly one replica should)",
      registers: [registry],
    }),
  };
  // Exported at 0 from the start (a labelled counter has no series until its first increase):
  // dashboards show 0, not "no data", and rate() sees the first refund.
  for (const reason of ["requested", "idle"]) {
    metrics.batchRefunds.inc({ reason }, 0);
    metrics.batchRefundGas.inc({ reason }, 0);
    metrics.batchRefundFees.inc({ reason }, 0);
  }
  return metrics;
}
