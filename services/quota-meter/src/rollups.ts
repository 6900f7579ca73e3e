// The usage stream folded into the system of record: each tollgate.usage.v2 batch becomes, in one
// PostgreSQL transaction keyed by its batch id, additions to the per-account, per-UTC-day rollups
// (requests, errors, calls counted in the windows) and the keys' last use. Batches that arrive
// together (up to FOLD_MAX within FOLD_WAIT_MS) share one transaction: its cost is per transaction,
// not per call, so it stays flat however many gateways report. The new totals then go
// to Redis's per-day usage (GetUsage) as maxima, so Redis follows PostgreSQL in any order: a
// redelivery, a replay of the stream from its start, or a re-seed after a Redis loss changes
// nothing. Every replica shares the durable consumer; JetStream spreads the batches.
import type { DeliveryInfo, EventConsumer, UsageCallV2 } from "@tollgate/events";
import { USAGE_V1, USAGE_V2 } from "@tollgate/events";
import type { Logger } from "@tollgate/platform";
import type { CreditDraws } from "./db/credit-ledger.ts";
import type { Records, UsageFold } from "./db/records.ts";
import type { QuotaMetrics } from "./metrics.ts";
import type { QuotaStore } from "./store/types.ts";
import { dayId } from "./windows.ts";

export const ROLLUP_DURABLE = "quota-meter-rollups";
/** Per-call v1 events (journals written before the upgrade), each folded as a batch of one. */
const ROLLUP_V1_DURABLE = "quota-meter-rollups-v1";

/** Batch ids are kept longer than the stream keeps messages (30 days), so no replay folds twice. */
const BATCH_MEMORY_MS = 45 * 24 * 3_600_000;
/** Usage batches folded in one transaction, at most; and how long the first waits for others. */
const FOLD_MAX = 200;
const FOLD_WAIT_MS = 500;

type Call = Pick<UsageCallV2, "account_id" | "key_id" | "status" | "time"> & {
  counted?: boolean | undefined;
  credits?: number | undefined;
  credits_epoch?: string | undefined;
};

/** How long a credit catch-up stays marked applied in the copy (the ledger row is then marked too). */
const CREDIT_APPLY_MEMORY_MS = 24 * 3_600_000;

const DAY_MS = 86_400_000;

/** What one batch adds: per account and UTC day, and each key's latest call. */
function foldCalls(calls: readonly Call[]) {
  const byDay = new Map<string, UsageFold>();
  const lastUsed = new Map<string, number>();
  const draws = new Map<string, CreditDraws>();
  // The calls of a batch mostly share a UTC day: its id is worked out again only off that day.
  let dayStart = Number.NaN;
  let day = "";
  let entry: UsageFold | undefined;
  for (const c of calls) {
    const at = Date.parse(c.time);
    if (!(at >= dayStart && at < dayStart + DAY_MS)) {
      dayStart = at - (((at % DAY_MS) + DAY_MS) % DAY_MS);
      day = dayId(at);
    }
    // Calls of one account come in runs: the previous call's entry is looked up only off that run.
    if (entry === undefined || entry.accountId !== c.account_id || entry.day !== day) {
      const k = `${c.account_id} ${day}`;
      entry = byDay.get(k);
      if (entry === undefined) {
        entry = { accountId: c.account_id, day, requests: 0, errors: 0, counted: 0 };
        byDay.set(k, entry);
      }
    }
    entry.requests++;
    if (c.status >= 400) entry.errors++;
    // Batches written before `counted` existed: a call with an answer was counted.
    if (c.counted ?? c.status < 500) entry.counted++;
    const seen = lastUsed.get(c.key_id);
    if (c.key_id && (seen === undefined || seen < at)) lastUsed.set(c.key_id, at);
    // Credits stay drawn only from calls that were answered (a refunded call reports none).
    if (c.credits) {
      let d = draws.get(c.account_id);
      if (d === undefined) {
        d = { accountId: c.account_id, byEpoch: new Map() };
        draws.set(c.account_id, d);
      }
      const epoch = c.credits_epoch ?? "";
      d.byEpoch.set(epoch, (d.byEpoch.get(epoch) ?? 0) + c.credits);
    }
  }
  return {
    draws: [...draws.values()],
    days: [...byDay.values()],
    lastUsed: [...lastUsed].map(([keyId, at]) => ({ keyId, at: new Date(at).toISOString() })),
  };
}

export interface RollupDeps {
  records: Records;
  store: QuotaStore;
  metrics: QuotaMetrics;
  logger: Logger;
  /** Whether the schema is migrated (the consumer waits for it). */
  schemaReady: Promise<void>;
}

export function startRollups(consumer: EventConsumer, deps: RollupDeps): () => void {
  const { records, store, metrics } = deps;

  async function fold(batches: Array<{ id: string; calls: readonly Call[] }>): Promise<void> {
    await deps.schemaReady;
    const { folded, totals, catchUps } = await records.foldUsage(
      batches.map((b) => ({ id: b.id, calls: b.calls.length, ...foldCalls(b.calls) })),
    );
    metrics.usageCounted.inc({ result: "counted" }, folded);
    if (batches.length > folded) metrics.usageCounted.inc({ result: "duplicate" }, batches.length - folded);
    // Totals of every day touched, also of batches folded before (their Redis write may have failed).
    await store.mergeUsage(totals);
    // Draws made in a copy lost since: taken from the current one once (CopyNotReady while it is
    // being seeded: the group is redelivered and the rows, still owed, come back).
    if (catchUps.length > 0) {
      await store.applyCredits(catchUps, CREDIT_APPLY_MEMORY_MS);
      await records.markApplied(catchUps);
      deps.logger.info(
        { entries: catchUps.length },
        "credit draws made in a lost copy applied to the current one",
      );
    }
  }

  // Folding is two round trips: a short ack wait redelivers a delivery lost in a blip within seconds.
  const options = { ackWaitMs: 10_000, retryDelayMs: 1_000, maxEvents: FOLD_MAX, maxWaitMs: FOLD_WAIT_MS };
  const events = <E>(group: Array<{ event: E; info: DeliveryInfo }>) => group.map((g) => g.event);
  consumer.consumeBatches(
    USAGE_V2,
    ROLLUP_DURABLE,
    (group) => fold(events(group).map((b) => ({ id: b.id, calls: b.calls }))),
    options,
  );
  consumer.consumeBatches(
    USAGE_V1,
    ROLLUP_V1_DURABLE,
    (group) => fold(events(group).map((e) => ({ id: `v1:${e.id}`, calls: [e] }))),
    options,
  );

  const forget = () =>
    deps.schemaReady
      .then(() => records.forgetBatches(new Date(Date.now() - BATCH_MEMORY_MS)))
      .catch((err: unknown) => deps.logger.warn({ err }, "could not prune folded usage batch ids"));
  void forget();
  const timer = setInterval(() => void forget(), 3_600_000);
  timer.unref();
  return () => clearInterval(timer);
}
