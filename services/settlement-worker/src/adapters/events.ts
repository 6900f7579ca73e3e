// The settlement stream into the ledger: a durable consumer every replica shares (JetStream spreads
// the events); each event is one insert keyed by its id, acked once written. A released call goes
// to the bounded samples instead (ledger-store.ts recordReleased).
import { type EventConsumer, SETTLEMENT_V1, SETTLEMENT_V2 } from "@tollgate/events";
import { entryOf, entryOfV1, type LedgerEntry } from "../core/ledger.ts";
import type { WorkerMetrics } from "../core/metrics.ts";
import type { LedgerStore } from "./ledger-store.ts";

export const LEDGER_DURABLE = "settlement-worker-ledger";
const LEDGER_V1_DURABLE = "settlement-worker-ledger-v1";

export function consumeSettlements(
  consumer: EventConsumer,
  ledger: LedgerStore,
  metrics: WorkerMetrics,
  schemaReady: Promise<void>,
): void {
  const write = async (entry: LedgerEntry, streamSeq: number) => {
    await schemaReady;
    const result =
      entry.outcome === "released"
        ? await ledger.recordReleased(entry, streamSeq)
        : (await ledger.record(entry, streamSeq))
          ? "recorded"
          : "duplicate";
    metrics.ledgerEvents.inc({ outcome: entry.outcome, result });
  };
  const options = { ackWaitMs: 10_000, retryDelayMs: 1_000 };
  consumer.consume(SETTLEMENT_V2, LEDGER_DURABLE, (e, info) => write(entryOf(e), info.streamSeq), options);
  consumer.consume(
    SETTLEMENT_V1,
    LEDGER_V1_DURABLE,
    (e, info) => write(entryOfV1(e), info.streamSeq),
    options,
  );
}
