// quota-meter's system of record in PostgreSQL: accounts and their plans, API keys (hashed),
// and the daily usage rollups. Admin writes land here first; the hot copy in Redis follows inside
// the same transaction (a failed Redis write rolls the database back, so a retry never duplicates).
// Nothing here is on the per-call path.
import { isPlanName } from "@tollgate/catalog";
import type { Kysely, Transaction } from "kysely";
import { sql } from "kysely";
import {
  type AccountPatch,
  type AccountRecord,
  type CreditEntry,
  isAccountStatus,
  type KeyRecord,
  type KnownKey,
  type UsageTotal,
} from "../store/types.ts";
import { type CreditDraws, creditLedger, foldDraws } from "./credit-ledger.ts";
import type { QuotaTables } from "./schema.ts";
import { signUps } from "./sign-ups.ts";

type Db = Kysely<QuotaTables>;
type AccountRow = Omit<QuotaTables["accounts"], "credits_only" | "sign_up_pending"> & {
  created_at: Date;
  updated_at: Date;
  credits_only: boolean;
  sign_up_pending: boolean;
};

const iso = (d: Date | null | undefined): string => (d ? d.toISOString() : "");

function account(row: Pick<AccountRow, keyof AccountRow>): AccountRecord {
  return {
    id: row.id,
    name: row.name,
    status: isAccountStatus(row.status) ? row.status : "suspended",
    dailyLimit: row.daily_limit,
    monthlyLimit: row.monthly_limit,
    burstPerSecond: row.burst_per_second,
    // The column's CHECK admits only plan names; anything else would be a newer release's plan.
    plan: isPlanName(row.plan) ? row.plan : "standard",
    createdAt: iso(row.created_at),
    creditsOnly: row.credits_only === true,
    signUpPending: row.sign_up_pending === true,
  };
}

/** The row of a new account. */
function accountRow(a: AccountRecord) {
  return {
    id: a.id,
    name: a.name,
    status: a.status,
    daily_limit: a.dailyLimit,
    monthly_limit: a.monthlyLimit,
    burst_per_second: a.burstPerSecond,
    plan: a.plan,
    credits_only: a.creditsOnly === true,
    sign_up_pending: a.signUpPending === true,
    created_at: a.createdAt,
    updated_at: a.createdAt,
  };
}

interface KeyRow {
  id: string;
  account_id: string;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

function key(row: KeyRow): KeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    prefix: row.prefix,
    createdAt: iso(row.created_at),
    revokedAt: iso(row.revoked_at),
    lastUsedAt: iso(row.last_used_at),
  };
}

const KEY_COLUMNS = ["id", "account_id", "prefix", "created_at", "last_used_at", "revoked_at"] as const;

/** One account-day of a usage batch, ready to add to the rollups. */
export interface UsageFold {
  accountId: string;
  day: string;
  requests: number;
  errors: number;
  counted: number;
}

/** One usage batch, folded: its id, its size, what it adds per account-day, each key's last call. */
export interface UsageBatchFold {
  id: string;
  calls: number;
  days: UsageFold[];
  lastUsed: Array<{ keyId: string; at: string }>;
  /** Credits the batch's answered calls drew, per account and the copy generation they were drawn in. */
  draws?: CreditDraws[];
}

export type Records = ReturnType<typeof createRecords>;

export function createRecords(db: Db) {
  /** Runs `write` then `andThen` (the Redis copy) in one transaction: both happen, or neither. */
  const transact = <T>(write: (tx: Transaction<QuotaTables>) => Promise<T>) =>
    db.transaction().execute(write);

  return {
    ...creditLedger(db),
    ...signUps(db, (row) => account(row as AccountRow)),
    async createAccount(a: AccountRecord, andThen: () => Promise<void>): Promise<void> {
      await transact(async (tx) => {
        await tx.insertInto("accounts").values(accountRow(a)).execute();
        await andThen();
      });
    },

    /**
     * The account bound to a wallet address; with `create`, the first sign-in makes it (and binds
     * the address) in one transaction, serialized per address so two first sign-ins make one.
     */
    async walletAccount(
      address: string,
      create: AccountRecord | undefined,
      andThen: (a: AccountRecord) => Promise<void>,
    ): Promise<{ account: AccountRecord; created: boolean } | undefined> {
      const find = (q: Db | Transaction<QuotaTables>) =>
        q
          .selectFrom("account_wallets as w")
          .innerJoin("accounts as a", "a.id", "w.account_id")
          .selectAll("a")
          .where("w.address", "=", address)
          .executeTakeFirst();
      const found = await find(db);
      if (found) return { account: account(found as AccountRow), created: false };
      if (!create) return undefined;
      return transact(async (tx) => {
        await sql`select pg_advisory_xact_lock(hashtext(${`wallet:${address}`}))`.execute(tx);
        const raced = await find(tx);
        if (raced) return { account: account(raced as AccountRow), created: false };
        await tx.insertInto("accounts").values(accountRow(create)).execute();
        await tx
          .insertInto("account_wallets")
          .values({ address, account_id: create.id, created_at: create.createdAt })
          .execute();
        await andThen(create);
        return { account: create, created: true };
      });
    },

    /** The account's per-day totals from `fromDay` on (inclusive), from the rollups. */
    async accountUsage(accountId: string, fromDay: string): Promise<UsageTotal[]> {
      const rows = await db
        .selectFrom("usage_daily")
        .select(["day", "requests", "errors"])
        .where("account_id", "=", accountId)
        .where("day", ">=", fromDay)
        .orderBy("day")
        .execute();
      return rows.map((r) => ({ accountId, day: r.day, requests: r.requests, errors: r.errors }));
    },

    async getAccount(id: string): Promise<AccountRecord | undefined> {
      const row = await db.selectFrom("accounts").selectAll().where("id", "=", id).executeTakeFirst();
      return row ? account(row as AccountRow) : undefined;
    },

    async updateAccount(
      id: string,
      patch: AccountPatch,
      at: string,
      andThen: (a: AccountRecord) => Promise<void>,
    ): Promise<AccountRecord | undefined> {
      return transact(async (tx) => {
        const row = await tx
          .updateTable("accounts")
          .set({
            updated_at: at,
            ...(patch.status !== undefined ? { status: patch.status } : {}),
            ...(patch.dailyLimit !== undefined ? { daily_limit: patch.dailyLimit } : {}),
            ...(patch.monthlyLimit !== undefined ? { monthly_limit: patch.monthlyLimit } : {}),
            ...(patch.burstPerSecond !== undefined ? { burst_per_second: patch.burstPerSecond } : {}),
            ...(patch.plan !== undefined ? { plan: patch.plan } : {}),
            ...(patch.creditsOnly !== undefined ? { credits_only: patch.creditsOnly } : {}),
            ...(patch.signUpPending !== undefined ? { sign_up_pending: patch.signUpPending } : {}),
          })
          .where("id", "=", id)
          .returningAll()
          .executeTakeFirst();
        if (!row) return undefined;
        const updated = account(row as AccountRow);
        await andThen(updated);
        return updated;
      });
    },

    /** False when the account does not exist; `andThen` gets the account as locked for the key. */
    async createKey(
      k: KeyRecord,
      hash: Buffer,
      andThen: (owner: AccountRecord) => Promise<void>,
    ): Promise<boolean> {
      return transact(async (tx) => {
        const owner = await tx
          .selectFrom("accounts")
          .selectAll()
          .where("id", "=", k.accountId)
          .forShare()
          .executeTakeFirst();
        if (!owner) return false;
        await tx
          .insertInto("api_keys")
          .values({ id: k.id, account_id: k.accountId, hash, prefix: k.prefix, created_at: k.createdAt })
          .execute();
        await andThen(account(owner as AccountRow));
        return true;
      });
    },

    async listKeys(accountId: string): Promise<KeyRecord[]> {
      const rows = await db
        .selectFrom("api_keys")
        .select(KEY_COLUMNS)
        .where("account_id", "=", accountId)
        .orderBy("created_at")
        .orderBy("id")
        .execute();
      return rows.map((r) => key(r as KeyRow));
    },

    /** Revokes once (a second revoke answers the first one's time); undefined when there is no such key. */
    async revokeKey(
      accountId: string,
      keyId: string,
      at: string,
      andThen: (k: KeyRecord) => Promise<void>,
    ): Promise<KeyRecord | undefined> {
      return transact(async (tx) => {
        const row = await tx
          .updateTable("api_keys")
          .set({ revoked_at: sql<Date>`coalesce(revoked_at, ${at}::timestamptz)` })
          .where("id", "=", keyId)
          .where("account_id", "=", accountId)
          .returning(KEY_COLUMNS)
          .executeTakeFirst();
        if (!row) return undefined;
        const revoked = key(row as KeyRow);
        await andThen(revoked);
        return revoked;
      });
    },

    /** Every live key with its account's status: the fail-open snapshot. */
    async knownKeys(): Promise<KnownKey[]> {
      const rows = await db
        .selectFrom("api_keys as k")
        .innerJoin("accounts as a", "a.id", "k.account_id")
        .select(["k.id", "k.account_id", "k.hash", "a.status"])
        .where("k.revoked_at", "is", null)
        .execute();
      return rows.map((r) => ({ hash: r.hash, keyId: r.id, accountId: r.account_id, status: r.status }));
    },

    // Re-seeding reads (seeder.ts): pages in primary-key order, so memory stays bounded.
    async accountsPage(after: string, limit: number): Promise<AccountRecord[]> {
      const rows = await db
        .selectFrom("accounts")
        .selectAll()
        .where("id", ">", after)
        .orderBy("id")
        .limit(limit)
        .execute();
      return rows.map((r) => account(r as AccountRow));
    },

    async liveKeysPage(after: string, limit: number): Promise<Array<{ key: KeyRecord; hash: Buffer }>> {
      const rows = await db
        .selectFrom("api_keys")
        .select([...KEY_COLUMNS, "hash"])
        .where("revoked_at", "is", null)
        .where("id", ">", after)
        .orderBy("id")
        .limit(limit)
        .execute();
      return rows.map((r) => ({ key: key(r as KeyRow), hash: r.hash }));
    },

    /** Accounts changed and keys revoked at or after `since`: what an admin write may have raced. */
    async changedSince(since: string) {
      const [accounts, revoked] = await Promise.all([
        db.selectFrom("accounts").selectAll().where("updated_at", ">=", new Date(since)).execute(),
        db.selectFrom("api_keys").select(KEY_COLUMNS).where("revoked_at", ">=", new Date(since)).execute(),
      ]);
      return {
        accounts: accounts.map((r) => account(r as AccountRow)),
        revoked: revoked.map((r) => key(r as KeyRow)),
      };
    },

    /** The rollups from `fromDay` on (inclusive), in pages by (account, day); `after` undefined: the first. */
    async usageSince(
      fromDay: string,
      after: { accountId: string; day: string } | undefined,
      limit: number,
    ): Promise<Array<UsageTotal & { counted: number }>> {
      let q = db.selectFrom("usage_daily").selectAll().where("day", ">=", fromDay);
      if (after) {
        q = q.where((eb) =>
          eb(eb.refTuple("account_id", "day"), ">", eb.tuple(after.accountId, after.day) as never),
        );
      }
      const rows = await q.orderBy("account_id").orderBy("day").limit(limit).execute();
      return rows.map((r) => ({
        accountId: r.account_id,
        day: r.day,
        requests: r.requests,
        errors: r.errors,
        counted: r.counted,
      }));
    },

    /**
     * Folds usage batches, each once per batch id, in one transaction: the ids, the account-days
     * and the keys' last use of the batches not folded before. Returns how many were new and the
     * current totals of every account-day the batches touch (a batch folded before, redelivered
     * because its Redis write failed then, gets its totals pushed again).
     */
    async foldUsage(
      delivered: readonly UsageBatchFold[],
    ): Promise<{ folded: number; totals: UsageTotal[]; catchUps: CreditEntry[] }> {
      // One batch delivered twice in one group (its outbox resent it) is one batch.
      const batches = [...new Map(delivered.map((b) => [b.id, b])).values()];
      if (batches.length === 0) return { folded: 0, totals: [], catchUps: [] };
      return transact(async (tx) => {
        const inserted = await tx
          .insertInto("usage_batches")
          .values(batches.map((b) => ({ id: b.id, calls: b.calls })))
          .onConflict((oc) => oc.column("id").doNothing())
          .returning("id")
          .execute();
        const fresh = new Set(inserted.map((r) => r.id));
        const days = new Map<string, UsageFold>();
        const lastUsed = new Map<string, string>();
        const touched = new Map<string, { accountId: string; day: string }>();
        for (const batch of batches) {
          const isNew = fresh.has(batch.id);
          for (const d of batch.days) {
            const k = `${d.accountId} ${d.day}`;
            touched.set(k, { accountId: d.accountId, day: d.day });
            if (!isNew) continue;
            const sum = days.get(k) ?? {
              accountId: d.accountId,
              day: d.day,
              requests: 0,
              errors: 0,
              counted: 0,
            };
            sum.requests += d.requests;
            sum.errors += d.errors;
            sum.counted += d.counted;
            days.set(k, sum);
          }
          if (!isNew) continue;
          for (const u of batch.lastUsed) {
            const seen = lastUsed.get(u.keyId);
            if (!seen || Date.parse(seen) < Date.parse(u.at)) lastUsed.set(u.keyId, u.at);
          }
        }
        // Rows in one order in every transaction: two folds of one account-day never deadlock.
        const sorted = [...days.values()].sort((a, b) =>
          a.accountId === b.accountId ? a.day.localeCompare(b.day) : a.accountId.localeCompare(b.accountId),
        );
        if (sorted.length > 0) {
          await tx
            .insertInto("usage_daily")
            .values(
              sorted.map((d) => ({
                account_id: d.accountId,
                day: d.day,
                requests: d.requests,
                errors: d.errors,
                counted: d.counted,
              })),
            )
            .onConflict((oc) =>
              oc.columns(["account_id", "day"]).doUpdateSet((eb) => ({
                requests: eb("usage_daily.requests", "+", eb.ref("excluded.requests")),
                errors: eb("usage_daily.errors", "+", eb.ref("excluded.errors")),
                counted: eb("usage_daily.counted", "+", eb.ref("excluded.counted")),
              })),
            )
            .execute();
        }
        if (lastUsed.size > 0) {
          const ids = [...lastUsed.keys()].sort();
          // Locked in id order first, then updated in one statement: no deadlock between folds.
          await tx
            .selectFrom("api_keys")
            .select("id")
            .where("id", "in", ids)
            .orderBy("id")
            .forUpdate()
            .execute();
          const values = sql.join([...lastUsed].map(([keyId, at]) => sql`(${keyId}, ${at}::timestamptz)`));
          await sql`update api_keys as k set last_used_at = greatest(coalesce(k.last_used_at, v.at), v.at)
            from (values ${values}) as v (id, at) where k.id = v.id`.execute(tx);
        }
        const catchUps = await foldDraws(tx, batches, fresh);
        const all = [...touched.values()];
        const totals =
          all.length === 0
            ? []
            : await tx
                .selectFrom("usage_daily")
                .select(["account_id", "day", "requests", "errors"])
                .where((eb) =>
                  eb.or(all.map((d) => eb.and([eb("account_id", "=", d.accountId), eb("day", "=", d.day)]))),
                )
                .execute();
        return {
          folded: fresh.size,
          catchUps,
          totals: totals.map((t) => ({
            accountId: t.account_id,
            day: t.day,
            requests: t.requests,
            errors: t.errors,
          })),
        };
      });
    },

    /** The account of a live key, by the key's hash. */
    async accountOfKey(hash: Buffer): Promise<AccountRecord | undefined> {
      const row = await db
        .selectFrom("api_keys as k")
        .innerJoin("accounts as a", "a.id", "k.account_id")
        .selectAll("a")
        .where("k.hash", "=", hash)
        .where("k.revoked_at", "is", null)
        .executeTakeFirst();
      return row ? account(row as AccountRow) : undefined;
    },

    /** Every wallet binding, in pages by address (seeding the copy's `wallets`). */
    async walletsPage(after: string, limit: number): Promise<Array<{ address: string; accountId: string }>> {
      const rows = await db
        .selectFrom("account_wallets")
        .select(["address", "account_id"])
        .where("address", ">", after)
        .orderBy("address")
        .limit(limit)
        .execute();
      return rows.map((r) => ({ address: r.address, accountId: r.account_id }));
    },

    /** Forgets batch ids folded before `before` (older than any message the stream still keeps). */
    async forgetBatches(before: Date): Promise<number> {
      const result = await db.deleteFrom("usage_batches").where("folded_at", "<", before).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}
