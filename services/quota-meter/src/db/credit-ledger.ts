// The credit ledger in PostgreSQL (0004_credits.sql): top-ups once per settlement, draws once per
// usage batch and account, and the bookkeeping that keeps the hot copy (Redis) one generation apart
// from it (see the README's Credits). Part of Records (records.ts); folded usage adds its draws here.
import type { Kysely, Transaction } from "kysely";
import { sql } from "kysely";
import type { CreditEntry } from "../store/types.ts";
import type { QuotaTables } from "./schema.ts";

type Db = Kysely<QuotaTables>;

/** A usage batch's draws, as foldDraws needs them. */
interface DrawingBatch {
  id: string;
  draws?: CreditDraws[];
}

export interface CreditDraws {
  accountId: string;
  /** Atomic units per generation ("" when the copy had none). */
  byEpoch: Map<string, number>;
}

/** The ledger cause of a usage batch's draws (one row per account). */
const drawCause = (batchId: string) => `usage:${batchId}`;

/** A settled top-up as the ledger records it. */
export interface TopUp {
  accountId: string;
  amount: number;
  /** The mesh's settlement id: credited once. */
  cause: string;
  scheme: string;
  paymentNetwork: string;
  transaction: string;
}

/** An operator's adjustment (0005): a grant gives, a deduct takes back; `cause` is its id. */
export interface Adjustment {
  accountId: string;
  /** Signed atomic units, never 0. */
  amount: number;
  cause: string;
  operator: string;
  reason: string;
}

/** An adjustment as recorded: the entry to apply to the copy, and who, why and when. */
export interface AdjustmentRow {
  entry: CreditEntry;
  operator: string;
  reason: string;
  at: Date;
}

/** One row of an account's credit movements (draws summed by day). */
export interface CreditMovementRow {
  kind: "top_up" | "draws" | "refund" | "adjustment";
  amount: number;
  at: Date;
  day: string;
  id: string;
  operator: string;
  reason: string;
  scheme: string;
  paymentNetwork: string;
  transaction: string;
  count: number;
}

/** The kinds that take from the balance: draws, and operators' deducts. */
const TAKES = ["draw", "deduct"] as const;
const takes = (kind: string) => (TAKES as readonly string[]).includes(kind);
/** Ledger rows' kinds summed into a balance: draws and deducts take, the rest give. */
const signedAmount = sql<number>`sum(case when kind in ('draw', 'deduct') then -amount else amount end)`;
const utcDay = sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`;

/** The latest seed generation of the hot copy ('' before the first), inside a transaction. */
const latestGeneration = (tx: Transaction<QuotaTables>) =>
  tx
    .selectFrom("credit_seeds")
    .select("generation")
    .orderBy("id", "desc")
    .limit(1)
    .executeTakeFirst()
    .then((r) => r?.generation ?? "");

/**
 * The draws of the batches folded now as ledger rows (one per batch and account; a batch folded
 * before adds none), and the catch-ups to apply to the copy: the part of each batch's rows drawn in
 * a copy older than the current generation (that copy was lost; the current one was seeded from
 * the ledger without these rows), for fresh rows and rows of redelivered batches alike.
 */
export async function foldDraws(
  tx: Transaction<QuotaTables>,
  batches: readonly DrawingBatch[],
  fresh: ReadonlySet<string>,
): Promise<CreditEntry[]> {
  const drawing = batches.filter((b) => (b.draws?.length ?? 0) > 0);
  if (drawing.length === 0) return [];
  // Locked before the generation is read: a seed cannot commit between the two.
  await sql`lock table credit_ledger in row exclusive mode`.execute(tx);
  const generation = await latestGeneration(tx);
  const rows = drawing
    .filter((b) => fresh.has(b.id))
    .flatMap((b) =>
      (b.draws ?? []).map((d) => {
        let amount = 0;
        let unapplied = 0;
        for (const [epoch, drawn] of d.byEpoch) {
          amount += drawn;
          if (epoch !== generation) unapplied += drawn;
        }
        return {
          account_id: d.accountId,
          kind: "draw" as const,
          amount,
          cause: drawCause(b.id),
          generation,
          unapplied,
        };
      }),
    )
    .filter((r) => r.amount > 0)
    .sort((a, b) =>
      a.cause === b.cause ? a.account_id.localeCompare(b.account_id) : a.cause.localeCompare(b.cause),
    );
  if (rows.length > 0) {
    await tx
      .insertInto("credit_ledger")
      .values(rows)
      .onConflict((oc) => oc.columns(["cause", "account_id", "kind"]).doNothing())
      .execute();
  }
  const owed = await tx
    .selectFrom("credit_ledger")
    .select(["cause", "account_id", "unapplied", "generation"])
    .where("kind", "=", "draw")
    .where(
      "cause",
      "in",
      drawing.map((b) => drawCause(b.id)),
    )
    .where("unapplied", ">", 0)
    .execute();
  return owed.map((r) => ({
    cause: r.cause,
    accountId: r.account_id,
    delta: -r.unapplied,
    generation: r.generation,
  }));
}

/** The ledger's queries (Records spreads them in). */
export function creditLedger(db: Db) {
  const transact = <T>(write: (tx: Transaction<QuotaTables>) => Promise<T>) =>
    db.transaction().execute(write);
  return {
    /**
     * Seeds the balances of copy generation `mark`: under a SHARE lock on the ledger (no row commits
     * meanwhile), records the generation and hands every account's balance to `write` (the copy).
     * False, writing nothing, when `mark` is known already (its copy was seeded).
     */
    async seedCredits(
      mark: string,
      write: (balances: Array<{ accountId: string; balance: number }>) => Promise<void>,
    ): Promise<boolean> {
      return transact(async (tx) => {
        await sql`lock table credit_ledger in share mode`.execute(tx);
        const known = await tx
          .insertInto("credit_seeds")
          .values({ generation: mark })
          .onConflict((oc) => oc.column("generation").doNothing())
          .returning("id")
          .executeTakeFirst();
        if (!known) return false;
        const rows = await tx
          .selectFrom("credit_ledger")
          .select(["account_id", signedAmount.as("balance")])
          .groupBy("account_id")
          .execute();
        await write(rows.map((r) => ({ accountId: r.account_id, balance: Number(r.balance) })));
        return true;
      });
    },

    /** Whether a copy of this generation was seeded with its balances. */
    async knowsGeneration(mark: string): Promise<boolean> {
      const row = await db
        .selectFrom("credit_seeds")
        .select("id")
        .where("generation", "=", mark)
        .executeTakeFirst();
      return row !== undefined;
    },

    /**
     * Records a settled top-up once per cause. Returns the ledger entry to apply to the copy (the
     * first recording's, also on a retry: applying is once per cause) and whether it is new; a cause
     * already credited to another account is refused (undefined).
     */
    async topUp(t: TopUp): Promise<{ entry: CreditEntry; fresh: boolean; owed: boolean } | undefined> {
      return transact(async (tx) => {
        // Locked before the generation is read: a seed cannot commit between the two.
        await sql`lock table credit_ledger in row exclusive mode`.execute(tx);
        const generation = await latestGeneration(tx);
        const inserted = await tx
          .insertInto("credit_ledger")
          .values({
            account_id: t.accountId,
            kind: "top_up",
            amount: t.amount,
            cause: t.cause,
            scheme: t.scheme,
            payment_network: t.paymentNetwork,
            transaction: t.transaction,
            generation,
            unapplied: t.amount,
          })
          .onConflict((oc) => oc.column("cause").where("kind", "=", "top_up").doNothing())
          .returning(["generation", "unapplied"])
          .executeTakeFirst();
        const row =
          inserted ??
          (await tx
            .selectFrom("credit_ledger")
            .select(["account_id", "generation", "unapplied"])
            .where("cause", "=", t.cause)
            .where("kind", "=", "top_up")
            .executeTakeFirst());
        if (!row || ("account_id" in row && row.account_id !== t.accountId)) return undefined;
        return {
          entry: { cause: t.cause, accountId: t.accountId, delta: t.amount, generation: row.generation },
          fresh: inserted !== undefined,
          owed: row.unapplied > 0,
        };
      });
    },

    /**
     * Records an operator's adjustment once per id: serialized per account, the balance `available`
     * reads (after the lock) must cover a deduct. An id recorded before answers its first recording
     * (`fresh` false) without checking again; an id used for another account or amount is refused.
     */
    async adjust(
      a: Adjustment,
      available: () => Promise<number>,
    ): Promise<
      | { row: AdjustmentRow; fresh: boolean; owed: boolean }
      | { refused: "id_used" }
      | { refused: "short"; balance: number }
    > {
      return transact(async (tx) => {
        await sql`select pg_advisory_xact_lock(hashtext(${`credits:${a.accountId}`}))`.execute(tx);
        const recorded = () =>
          tx
            .selectFrom("credit_ledger")
            .select([
              "account_id",
              "kind",
              "amount",
              "generation",
              "unapplied",
              "operator",
              "reason",
              "created_at",
            ])
            .where("cause", "=", a.cause)
            .where("kind", "in", ["grant", "deduct"])
            .executeTakeFirst();
        const answer = (r: NonNullable<Awaited<ReturnType<typeof recorded>>>, fresh: boolean) => {
          const amount = r.kind === "deduct" ? -r.amount : r.amount;
          if (r.account_id !== a.accountId || amount !== a.amount) return { refused: "id_used" as const };
          return {
            row: {
              entry: { cause: a.cause, accountId: a.accountId, delta: amount, generation: r.generation },
              operator: r.operator ?? "",
              reason: r.reason ?? "",
              at: r.created_at,
            },
            fresh,
            owed: r.unapplied > 0,
          };
        };
        const before = await recorded();
        if (before) return answer(before, false);
        if (a.amount < 0) {
          const balance = await available();
          if (balance + a.amount < 0) return { refused: "short" as const, balance };
        }
        // Locked before the generation is read: a seed cannot commit between the two.
        await sql`lock table credit_ledger in row exclusive mode`.execute(tx);
        const generation = await latestGeneration(tx);
        const inserted = await tx
          .insertInto("credit_ledger")
          .values({
            account_id: a.accountId,
            kind: a.amount < 0 ? "deduct" : "grant",
            amount: Math.abs(a.amount),
            cause: a.cause,
            operator: a.operator,
            reason: a.reason,
            generation,
            unapplied: Math.abs(a.amount),
          })
          .onConflict((oc) => oc.column("cause").where("kind", "in", ["grant", "deduct"]).doNothing())
          .returning("id")
          .executeTakeFirst();
        const row = await recorded();
        if (!row) throw new Error("the adjustment was neither recorded nor found");
        return answer(row, inserted !== undefined);
      });
    },

    /**
     * An account's credit movements from `fromDay` on (inclusive), newest first: top-ups, refunds
     * and adjustments one by one, draws summed per UTC day.
     */
    async creditMovements(accountId: string, fromDay: string): Promise<CreditMovementRow[]> {
      const since = new Date(`${fromDay}T00:00:00Z`);
      const [rows, draws] = await Promise.all([
        db
          .selectFrom("credit_ledger")
          .select([
            "kind",
            "amount",
            "cause",
            "operator",
            "reason",
            "scheme",
            "payment_network",
            "transaction",
            "created_at",
            utcDay.as("day"),
          ])
          .where("account_id", "=", accountId)
          .where("kind", "!=", "draw")
          .where("created_at", ">=", since)
          .execute(),
        db
          .selectFrom("credit_ledger")
          .select([
            utcDay.as("day"),
            sql<number>`sum(amount)`.as("amount"),
            sql<number>`count(*)`.as("count"),
            sql<Date>`max(created_at)`.as("at"),
          ])
          .where("account_id", "=", accountId)
          .where("kind", "=", "draw")
          .where("created_at", ">=", since)
          .groupBy(utcDay)
          .execute(),
      ]);
      const none = {
        id: "",
        operator: "",
        reason: "",
        scheme: "",
        paymentNetwork: "",
        transaction: "",
        count: 0,
      };
      const movements: CreditMovementRow[] = [
        ...rows.map((r) => ({
          ...none,
          kind:
            r.kind === "grant" || r.kind === "deduct"
              ? ("adjustment" as const)
              : (r.kind as "top_up" | "refund"),
          amount: takes(r.kind) ? -r.amount : r.amount,
          at: r.created_at,
          day: r.day,
          id: r.cause,
          operator: r.operator ?? "",
          reason: r.reason ?? "",
          scheme: r.scheme ?? "",
          paymentNetwork: r.payment_network ?? "",
          transaction: r.transaction ?? "",
        })),
        ...draws.map((d) => ({
          ...none,
          kind: "draws" as const,
          amount: -Number(d.amount),
          at: new Date(d.at),
          day: d.day,
          count: Number(d.count),
        })),
      ];
      return movements.sort((x, y) => y.at.getTime() - x.at.getTime());
    },

    /** Ledger entries applied to the copy: nothing of them is owed to it any more. */
    async markApplied(entries: readonly CreditEntry[]): Promise<void> {
      if (entries.length === 0) return;
      await db
        .updateTable("credit_ledger")
        .set({ unapplied: 0 })
        .where((eb) =>
          eb.or(entries.map((e) => eb.and([eb("cause", "=", e.cause), eb("account_id", "=", e.accountId)]))),
        )
        .execute();
    },

    /** Ledger rows the copy still lacks (a crash or a blip came between the two), oldest first. */
    async owedCredits(limit: number): Promise<CreditEntry[]> {
      const rows = await db
        .selectFrom("credit_ledger")
        .select(["cause", "account_id", "kind", "unapplied", "generation"])
        .where("unapplied", ">", 0)
        .orderBy("id")
        .limit(limit)
        .execute();
      return rows.map((r) => ({
        cause: r.cause,
        accountId: r.account_id,
        delta: takes(r.kind) ? -r.unapplied : r.unapplied,
        generation: r.generation,
      }));
    },

    /** An account's balance from the ledger (top-ups - draws + refunds). */
    async creditBalance(accountId: string): Promise<number> {
      const row = await db
        .selectFrom("credit_ledger")
        .select(signedAmount.as("balance"))
        .where("account_id", "=", accountId)
        .executeTakeFirst();
      return Number(row?.balance ?? 0);
    },

    /** The ledger by UTC day from `fromDay` on (inclusive): top-ups, draws and refunds. */
    async creditDays(
      accountId: string,
      fromDay: string,
    ): Promise<Array<{ day: string; topUps: number; draws: number; refunds: number }>> {
      const day = sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`;
      const rows = await db
        .selectFrom("credit_ledger")
        .select([
          day.as("day"),
          sql<number>`sum(amount) filter (where kind = 'top_up')`.as("top_ups"),
          sql<number>`sum(amount) filter (where kind = 'draw')`.as("draws"),
          sql<number>`sum(amount) filter (where kind = 'refund')`.as("refunds"),
        ])
        .where("account_id", "=", accountId)
        .where("created_at", ">=", new Date(`${fromDay}T00:00:00Z`))
        .groupBy(day)
        .execute();
      return rows.map((r) => ({
        day: r.day,
        topUps: Number(r.top_ups ?? 0),
        draws: Number(r.draws ?? 0),
        refunds: Number(r.refunds ?? 0),
      }));
    },
  };
}
