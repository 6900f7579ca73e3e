import { prom, type Registry } from "@tollgate/platform";

export interface WorkerMetrics {
  ledgerEvents: prom.Counter<"outcome" | "result">;
  reconcileDifferences: prom.Counter<"kind">;
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
  };
}
