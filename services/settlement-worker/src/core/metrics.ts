import { prom, type Registry } from "@tollgate/platform";

export interface WorkerMetrics {
  ledgerEvents: prom.Counter<"outcome" | "result">;
  reconcileDifferences: prom.Counter<"kind">;
  /** MPP session channels settled on schedule (reason: amount, age, close_requested; error when failed). */
  sessionSettles: prom.Counter<"reason" | "result">;
  /** 1 while this replica holds the session settlement lease. */
  sessionLeaseHeld: prom.Gauge;
}

export function createWorkerMetrics(registry: Registry): WorkerMetrics {
  return {
    ledgerEvents: new prom.Counter({
      name: "settlement_ledger_events_total",
      help: "Settlement events written to the ledger, by outcome and result (recorded, duplicate)",
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
  };
}
