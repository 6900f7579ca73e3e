// The ledger table (migrations/0001_ledger.sql) through kysely: one insert per event, ignored when
// its id is already there, so a redelivery or a replay of the stream from its start changes nothing.
import type { ColumnType, Kysely } from "kysely";
import { sql } from "kysely";
import {
  type Cursor,
  dayBounds,
  encodeCursor,
  INFLOWS,
  type LedgerEntry,
  type LedgerFilter,
  type Outcome,
} from "../core/ledger.ts";

type Timestamp = ColumnType<Date, Date | string, Date | string>;

export interface LedgerTables {
  settlements: {
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
  };
}

type Row = Omit<LedgerTables["settlements"], "occurred_at" | "recorded_at"> & { occurred_at: Date };

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

export interface OutcomeTotal {
  outcome: string;
  asset: string;
  count: number;
  amount: string;
}

export type LedgerStore = ReturnType<typeof createLedgerStore>;

export function createLedgerStore(db: Kysely<LedgerTables>) {
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

  const filtered = (f: LedgerFilter) => {
    let q = db.selectFrom("settlements");
    if (f.payer) q = q.where(sql<string>`lower(payer)`, "=", f.payer.toLowerCase());
    if (f.channel) q = q.where("channel", "=", f.channel);
    if (f.outcome) q = q.where("outcome", "=", f.outcome);
    if (f.day) {
      const { start, end } = dayBounds(f.day);
      q = q.where("occurred_at", ">=", start).where("occurred_at", "<", end);
    }
    return q;
  };

  return {
    /** True when recorded now, false when the event was already in the ledger. */
    async record(e: LedgerEntry, streamSeq: number): Promise<boolean> {
      const inserted = await db
        .insertInto("settlements")
        .values({
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
        })
        .onConflict((oc) => oc.column("id").doNothing())
        .returning("id")
        .executeTakeFirst();
      return inserted !== undefined;
    },

    /** Newest first, `limit` per page, with totals per outcome and asset over the whole filter. */
    async list(f: LedgerFilter, limit: number, after: Cursor | undefined) {
      let page = filtered(f).select(columns);
      if (after) {
        page = page.where((eb) =>
          eb(eb.refTuple("occurred_at", "id"), "<", eb.tuple(new Date(after.time), after.id) as never),
        );
      }
      const [rows, totals] = await Promise.all([
        page
          .orderBy("occurred_at", "desc")
          .orderBy("id", "desc")
          .limit(limit + 1)
          .execute(),
        filtered(f)
          .select([
            "outcome",
            "asset",
            sql<number>`count(*)::int8`.as("count"),
            sql<string>`sum(amount)::text`.as("amount"),
          ])
          .groupBy(["outcome", "asset"])
          .orderBy("outcome")
          .orderBy("asset")
          .execute(),
      ]);
      const entries = rows.slice(0, limit).map((r) => entry(r as Row));
      const last = entries.at(-1);
      return {
        entries,
        nextCursor: rows.length > limit && last ? encodeCursor({ time: last.time, id: last.id }) : "",
        totals: totals as OutcomeTotal[],
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
