// The ledger tables through kysely. `settlements` (migrations/0001_ledger.sql): one insert per event,
// ignored when its id is already there, so a redelivery or a replay of the stream from its start
// changes nothing. `released_calls` and `released_windows` (0002): released calls as samples, at most
// a bound per payer per UTC hour, pruned after the retention; as idempotent as the rest.
import type { ColumnType, Kysely } from "kysely";
import { sql } from "kysely";
import {
  type Cursor,
  dayBounds,
  encodeCursor,
  hourOf,
  INFLOWS,
  type LedgerEntry,
  type LedgerFilter,
  type Outcome,
  PAYMENTS,
  type ReleasedPolicy,
  type ReleasedResult,
  releasedCutoff,
} from "../core/ledger.ts";

type Timestamp = ColumnType<Date, Date | string, Date | string>;

interface LedgerRow {
  id: string;
  outcome: string;
  request_id: string | null;
  endpoint: string | null;
  network: string | null;
  scheme: string;
  payer: string;
  amount: string;
  asset: string;
  payment_network: string;
  transaction: string | null;
  channel: string | null;
  cumulative: string | null;
  reason: string | null;
  occurred_at: Timestamp;
  recorded_at: ColumnType<Date, never, never>;
  stream_seq: number;
}

export interface LedgerTables {
  settlements: LedgerRow;
  /** Released calls: the same columns, outcome always `released`. */
  released_calls: LedgerRow;
  released_windows: { payer: string; window_start: Timestamp; kept: number };
}

type Row = Omit<LedgerRow, "occurred_at" | "recorded_at"> & { occurred_at: Date };

function entry(r: Row): LedgerEntry {
  return {
    id: r.id,
    outcome: r.outcome as Outcome,
    requestId: r.request_id,
    endpoint: r.endpoint,
    network: r.network,
    scheme: r.scheme,
    payer: r.payer,
    amount: r.amount,
    asset: r.asset,
    paymentNetwork: r.payment_network,
    transaction: r.transaction,
    channel: r.channel,
    cumulative: r.cumulative,
    reason: r.reason,
    time: r.occurred_at.toISOString(),
  };
}

interface OutcomeTotal {
  outcome: string;
  asset: string;
  count: number;
  amount: string;
}

export type LedgerStore = ReturnType<typeof createLedgerStore>;

/** The defaults of LEDGER_RELEASED_PER_HOUR and LEDGER_RELEASED_RETENTION_DAYS. */
export const RELEASED_DEFAULTS: ReleasedPolicy = { perHour: 20, retentionDays: 30 };

export function createLedgerStore(db: Kysely<LedgerTables>, released: ReleasedPolicy = RELEASED_DEFAULTS) {
  const columns = [
    "id",
    "outcome",
    "request_id",
    "endpoint",
    "network",
    "scheme",
    "payer",
    "amount",
    "asset",
    "payment_network",
    "transaction",
    "channel",
    "cumulative",
    "reason",
    "occurred_at",
    "stream_seq",
  ] as const;

  const rowOf = (e: LedgerEntry, streamSeq: number) => ({
    id: e.id,
    outcome: e.outcome,
    request_id: e.requestId,
    endpoint: e.endpoint,
    network: e.network,
    scheme: e.scheme,
    payer: e.payer,
    amount: e.amount,
    asset: e.asset,
    payment_network: e.paymentNetwork,
    transaction: e.transaction,
    channel: e.channel,
    cumulative: e.cumulative,
    reason: e.reason,
    occurred_at: e.time,
    stream_seq: streamSeq,
  });

  const filtered = (table: "settlements" | "released_calls", f: LedgerFilter) => {
    let q = db.selectFrom(table);
    if (f.payer) q = q.where(sql<string>`lower(payer)`, "=", f.payer.toLowerCase());
    if (f.channel) q = q.where("channel", "=", f.channel);
    if (f.outcome) q = q.where("outcome", "=", f.outcome);
    if (f.day) {
      const { start, end } = dayBounds(f.day);
      q = q.where("occurred_at", ">=", start).where("occurred_at", "<", end);
    }
    return q;
  };
  /** The tables a filter reads: released calls live in their own. */
  const tablesOf = (f: LedgerFilter) =>
    f.outcome === "released"
      ? (["released_calls"] as const)
      : f.outcome
        ? (["settlements"] as const)
        : (["settlements", "released_calls"] as const);

  return {
    /** True when recorded now, false when the event was already in the ledger. */
    async record(e: LedgerEntry, streamSeq: number): Promise<boolean> {
      const inserted = await db
        .insertInto("settlements")
        .values(rowOf(e, streamSeq))
        .onConflict((oc) => oc.column("id").doNothing())
        .returning("id")
        .executeTakeFirst();
      return inserted !== undefined;
    },

    /**
     * A released call: kept as a sample while its payer's UTC hour has fewer than the bound, else
     * only counted by the caller. The hour's row, locked first, serialises the replicas, so the bound
     * is exact; a redelivered or replayed sample is found by its id and changes nothing.
     */
    async recordReleased(e: LedgerEntry, streamSeq: number, now = Date.now()): Promise<ReleasedResult> {
      if (Date.parse(e.time) < releasedCutoff(released, now).getTime()) return "expired";
      const window = { payer: e.payer.toLowerCase(), window_start: hourOf(e.time) };
      return db.transaction().execute(async (tx) => {
        const { kept } = await tx
          .insertInto("released_windows")
          .values({ ...window, kept: 0 })
          .onConflict((oc) =>
            oc
              .columns(["payer", "window_start"])
              .doUpdateSet((eb) => ({ kept: eb.ref("released_windows.kept") })),
          )
          .returning("kept")
          .executeTakeFirstOrThrow();
        if (kept >= released.perHour) {
          const known = await tx
            .selectFrom("released_calls")
            .select("id")
            .where("id", "=", e.id)
            .executeTakeFirst();
          return known ? "duplicate" : "over_bound";
        }
        const inserted = await tx
          .insertInto("released_calls")
          .values(rowOf(e, streamSeq))
          .onConflict((oc) => oc.column("id").doNothing())
          .returning("id")
          .executeTakeFirst();
        if (!inserted) return "duplicate";
        await tx
          .updateTable("released_windows")
          .set((eb) => ({ kept: eb("kept", "+", 1) }))
          .where("payer", "=", window.payer)
          .where("window_start", "=", window.window_start)
          .execute();
        return "recorded";
      });
    },

    /** Drops released samples (and their hours) older than the retention; returns how many samples. */
    async pruneReleased(now = Date.now()): Promise<number> {
      const cutoff = releasedCutoff(released, now);
      const gone = await db.deleteFrom("released_calls").where("occurred_at", "<", cutoff).executeTakeFirst();
      // An hour is dropped once it has wholly passed the cutoff.
      await db
        .deleteFrom("released_windows")
        .where("window_start", "<", new Date(cutoff.getTime() - 3_600_000))
        .execute();
      return Number(gone.numDeletedRows);
    },

    /**
     * One payer's per-call payments (PAYMENTS: settled on chain per call, accrued to a channel),
     * newest first, `limit` per page, read along settlements_by_payer.
     */
    async payments(payer: string, limit: number, after: Cursor | undefined) {
      let q = db
        .selectFrom("settlements")
        .select(columns)
        .where(sql<string>`lower(payer)`, "=", payer.toLowerCase())
        .where("outcome", "in", [...PAYMENTS]);
      if (after) {
        q = q.where((eb) =>
          eb(eb.refTuple("occurred_at", "id"), "<", eb.tuple(new Date(after.time), after.id) as never),
        );
      }
      const rows = await q
        .orderBy("occurred_at", "desc")
        .orderBy("id", "desc")
        .limit(limit + 1)
        .execute();
      const entries = rows.slice(0, limit).map((r) => entry(r as Row));
      const last = entries.at(-1);
      return {
        entries,
        nextCursor: rows.length > limit && last ? encodeCursor({ time: last.time, id: last.id }) : "",
      };
    },

    /** Newest first, `limit` per page, with totals per outcome and asset over the whole filter. */
    async list(f: LedgerFilter, limit: number, after: Cursor | undefined) {
      const [first, ...more] = tablesOf(f).map((table) => filtered(table, f).select(columns));
      // tablesOf names at least one table.
      const all = more.reduce((q, next) => q.unionAll(next), first!);
      let page = db.selectFrom(all.as("l")).selectAll();
      if (after) {
        page = page.where((eb) =>
          eb(eb.refTuple("occurred_at", "id"), "<", eb.tuple(new Date(after.time), after.id) as never),
        );
      }
      const totalsOf = (table: "settlements" | "released_calls") =>
        filtered(table, f)
          .select([
            "outcome",
            "asset",
            sql<number>`count(*)::int8`.as("count"),
            sql<string>`sum(amount)::text`.as("amount"),
          ])
          .groupBy(["outcome", "asset"])
          .execute();
      const [rows, ...totals] = await Promise.all([
        page
          .orderBy("occurred_at", "desc")
          .orderBy("id", "desc")
          .limit(limit + 1)
          .execute(),
        ...tablesOf(f).map(totalsOf),
      ]);
      const entries = rows.slice(0, limit).map((r) => entry(r as Row));
      const last = entries.at(-1);
      return {
        entries,
        nextCursor: rows.length > limit && last ? encodeCursor({ time: last.time, id: last.id }) : "",
        totals: (totals.flat() as OutcomeTotal[]).sort((a, b) =>
          a.outcome === b.outcome ? (a.asset < b.asset ? -1 : 1) : a.outcome < b.outcome ? -1 : 1,
        ),
      };
    },

    /**
     * Entries that say money arrived, on `paymentNetwork` in `asset`: those naming one of
     * `transactions`, and those that happened between `from` and `to`.
     */
    async inflows(
      paymentNetwork: string,
      asset: string,
      transactions: readonly string[],
      between: { from: Date; to: Date },
    ) {
      const rows = await db
        .selectFrom("settlements")
        .select(["id", "transaction", "payer", "amount"])
        .where("outcome", "in", [...INFLOWS])
        .where("payment_network", "=", paymentNetwork)
        .where(sql<string>`lower(asset)`, "=", asset.toLowerCase())
        .where("transaction", "is not", null)
        .where((eb) =>
          eb.or([
            ...(transactions.length > 0
              ? [
                  eb(
                    sql<string>`lower("transaction")`,
                    "in",
                    transactions.map((t) => t.toLowerCase()),
                  ),
                ]
              : []),
            eb.and([eb("occurred_at", ">=", between.from), eb("occurred_at", "<=", between.to)]),
          ]),
        )
        .execute();
      return rows.map((r) => ({
        id: r.id,
        transaction: r.transaction ?? "",
        payer: r.payer,
        amount: BigInt(r.amount),
      }));
    },
  };
}
