// The same migrations, the same driver and the same queries on both databases Tollgate runs on:
// the embedded PGlite behind pglite-socket that `pnpm start` runs (PostgreSQL compiled to
// WebAssembly, started here exactly as deploy/local starts it), and the machine's PostgreSQL 15.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Database, migrate, openDatabase } from "@tollgate/db";
import { freePort, type RunningService, startEmbeddedPostgres } from "@tollgate/local";
import type { Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MIGRATIONS as QUOTA } from "../../services/quota-meter/src/db/migrations.ts";
import { createRecords } from "../../services/quota-meter/src/db/records.ts";
import type { QuotaTables } from "../../services/quota-meter/src/db/schema.ts";
import {
  createLedgerStore,
  type LedgerTables,
} from "../../services/settlement-worker/src/adapters/ledger-store.ts";
import { MIGRATIONS as LEDGER } from "../../services/settlement-worker/src/migrations.ts";
import { silentLogger } from "../quota-meter/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../support/postgres.ts";

let dataDir: string;
let pglite: { url: string; process: RunningService } | undefined;
let server: TestDatabase;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tollgate-pglite-"));
  pglite = await startEmbeddedPostgres(join(dataDir, "pglite"), await freePort(), () => {});
  server = await createTestDatabase("migrations");
});

afterAll(async () => {
  await pglite?.process.stop();
  await server?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

const open = (url: string) =>
  openDatabase<QuotaTables & LedgerTables>({
    url,
    logger: silentLogger(),
    applicationName: "migrations-test",
  });

describe("embedded PGlite (pglite-socket) under concurrent connections", () => {
  it("answers 300 parameterized queries sent at once over 8 connections, each with its own rows", async () => {
    const { Pool } = await import("pg");
    const pool = new Pool({ connectionString: pglite!.url, max: 8 });
    try {
      // Shapes differ in parameter count and types, so a Bind applied to another connection's
      // Parse fails, and rows from another query do not match.
      const answers = await Promise.all(
        Array.from({ length: 300 }, async (_, i) => {
          if (i % 3 === 0) {
            const r = await pool.query("select $1::int + 1 as v", [i]);
            return r.rows[0]?.v === i + 1;
          }
          if (i % 3 === 1) {
            const r = await pool.query("select $1::text || '-' || $2::text || '-' || $3::int as v", [
              "a",
              "b",
              i,
            ]);
            return r.rows[0]?.v === `a-b-${i}`;
          }
          const r = await pool.query("select generate_series(1, $1::int) as v, $2::text as tag", [
            (i % 7) + 1,
            `q${i}`,
          ]);
          return r.rows.length === (i % 7) + 1 && r.rows.every((row) => row.tag === `q${i}`);
        }),
      );
      expect(answers.filter((ok) => !ok)).toEqual([]);
    } finally {
      await pool.end();
    }
  });
});

const targets = () => [
  ["embedded PGlite (pglite-socket)", pglite!.url],
  ["PostgreSQL 15 (the machine's server)", server.url],
];

describe.each([["embedded PGlite (pglite-socket)"], ["PostgreSQL 15 (the machine's server)"]])(
  "%s",
  (name) => {
    let database: Database<QuotaTables & LedgerTables>;
    beforeAll(() => {
      database = open(targets().find(([n]) => n === name)![1]!);
    });
    afterAll(() => database?.close());

    it("applies every migration once, in one go, and nothing the second time", async () => {
      expect(await migrate(database.db, QUOTA)).toEqual([
        "0001_accounts_keys_usage",
        "0002_wallets",
        "0003_account_plans",
        "0004_credits",
        "0005_credit_adjustments",
      ]);
      expect(await migrate(database.db, LEDGER)).toEqual(["0001_ledger", "0002_released_calls"]);
      // Replicas starting together, and the operator's `pnpm migrate`, find nothing to do.
      const again = await Promise.all([
        migrate(database.db, QUOTA),
        migrate(database.db, QUOTA),
        migrate(database.db, LEDGER),
      ]);
      expect(again).toEqual([[], [], []]);
    });

    it("keeps the credit ledger: top-ups once per settlement, draws once per batch, owed entries per copy generation", async () => {
      const records = createRecords(database.db as unknown as Kysely<QuotaTables>);
      const at = new Date().toISOString();
      const account = {
        id: `acct_${randomBytes(4).toString("hex")}`,
        name: "credits",
        status: "active" as const,
        dailyLimit: 0,
        monthlyLimit: 0,
        burstPerSecond: 0,
        plan: "free" as const,
        createdAt: at,
        creditsOnly: true,
      };
      await records.createAccount(account, async () => {});
      expect((await records.getAccount(account.id))?.creditsOnly).toBe(true);
      // The copy of generation g1 is seeded: every balance handed over under the lock, once.
      const g1 = `g1-${randomBytes(4).toString("hex")}`;
      const seeded: Array<{ accountId: string; balance: number }>[] = [];
      expect(await records.seedCredits(g1, async (b) => void seeded.push(b))).toBe(true);
      expect(await records.seedCredits(g1, async (b) => void seeded.push(b))).toBe(false);
      expect(seeded).toHaveLength(1);
      expect(await records.knowsGeneration(g1)).toBe(true);

      const topUp = {
        accountId: account.id,
        amount: 1_000_000,
        cause: `settle:${randomBytes(8).toString("hex")}`,
        scheme: "exact",
        paymentNetwork: "eip155:84532",
        transaction: `0x${"cd".repeat(32)}`,
      };
      const first = await records.topUp(topUp);
      expect(first).toEqual({
        entry: { cause: topUp.cause, accountId: account.id, delta: 1_000_000, generation: g1 },
        fresh: true,
        owed: true,
      });
      // A retry of the same settlement: the same entry, not a second credit.
      expect(await records.topUp(topUp)).toMatchObject({ fresh: false, owed: true });
      // The same settlement named for another account is refused.
      const other = { ...account, id: `${account.id}b` };
      await records.createAccount(other, async () => {});
      expect(await records.topUp({ ...topUp, accountId: other.id })).toBeUndefined();
      expect(await records.owedCredits(100)).toContainEqual(first?.entry);
      await records.markApplied([first!.entry]);
      expect(await records.owedCredits(100)).not.toContainEqual(first?.entry);

      // Draws of one batch: drawn in g1 (the current copy) and in an older copy lost since.
      const draws = [
        {
          accountId: account.id,
          byEpoch: new Map([
            [g1, 3_000],
            ["g0", 5_000],
          ]),
        },
      ];
      const batch = {
        id: `credits-${randomBytes(4).toString("hex")}`,
        calls: 3,
        days: [],
        lastUsed: [],
        draws,
      };
      const folded = await records.foldUsage([batch]);
      const catchUp = { cause: `usage:${batch.id}`, accountId: account.id, delta: -5_000, generation: g1 };
      expect(folded.catchUps).toEqual([catchUp]);
      // Redelivered (the copy was not ready): no second row, the catch-up still owed.
      expect((await records.foldUsage([batch])).catchUps).toEqual([catchUp]);
      await records.markApplied([catchUp]);
      expect((await records.foldUsage([batch])).catchUps).toEqual([]);
      expect(await records.creditBalance(account.id)).toBe(1_000_000 - 8_000);
      const day = at.slice(0, 10);
      expect(await records.creditDays(account.id, day)).toEqual([
        { day, topUps: 1_000_000, draws: 8_000, refunds: 0 },
      ]);
      // A new copy (g2) is seeded from the ledger: the balance as the ledger has it.
      const g2 = `g2-${randomBytes(4).toString("hex")}`;
      let balances: Array<{ accountId: string; balance: number }> = [];
      await records.seedCredits(g2, async (b) => {
        balances = b;
      });
      expect(balances).toContainEqual({ accountId: account.id, balance: 992_000 });
      // A top-up after it is owed to g2.
      const later = await records.topUp({ ...topUp, cause: `${topUp.cause}-2` });
      expect(later?.entry.generation).toBe(g2);

      // An operator's deduct (0005): once per id, owed to g2, in the balance, the seed and the movements.
      const adjustment = {
        accountId: account.id,
        amount: -2_000,
        cause: `adj_${randomBytes(16).toString("hex")}`,
        operator: "ops",
        reason: "incident",
      };
      const adjusted = await records.adjust(adjustment, async () => 1_992_000);
      expect(adjusted).toMatchObject({
        row: { entry: { delta: -2_000, generation: g2 }, operator: "ops", reason: "incident" },
        fresh: true,
        owed: true,
      });
      expect(await records.adjust(adjustment, async () => 0)).toMatchObject({ fresh: false });
      expect(await records.adjust({ ...adjustment, amount: -1 }, async () => 1e9)).toEqual({
        refused: "id_used",
      });
      expect(
        await records.adjust(
          { ...adjustment, cause: `${adjustment.cause.slice(0, -1)}0`, amount: -5 },
          async () => 4,
        ),
      ).toEqual({
        refused: "short",
        balance: 4,
      });
      expect(await records.owedCredits(100)).toContainEqual({
        cause: adjustment.cause,
        accountId: account.id,
        delta: -2_000,
        generation: g2,
      });
      expect(await records.creditBalance(account.id)).toBe(1_990_000);
      const kinds = (await records.creditMovements(account.id, day)).map((m) => [m.kind, m.amount]);
      expect(kinds.sort()).toEqual(
        [
          ["adjustment", -2_000],
          ["draws", -8_000],
          ["top_up", 1_000_000],
          ["top_up", 1_000_000],
        ].sort(),
      );
    });

    it("runs the services' own queries: records, rollups folded once, the ledger once", async () => {
      // One connection pool for both services' tables; each service's code sees only its own.
      const records = createRecords(database.db as unknown as Kysely<QuotaTables>);
      const at = new Date().toISOString();
      const account = {
        id: `acct_${randomBytes(4).toString("hex")}`,
        name: "migrations",
        status: "active" as const,
        dailyLimit: 10,
        monthlyLimit: 0,
        burstPerSecond: 0,
        plan: "standard" as const,
        createdAt: at,
      };
      await records.createAccount(account, async () => {});
      const key = {
        id: `key_${randomBytes(4).toString("hex")}`,
        accountId: account.id,
        prefix: "tg_live_abcd",
        createdAt: at,
        revokedAt: "",
        lastUsedAt: "",
      };
      expect(await records.createKey(key, randomBytes(32), async () => {})).toBe(true);
      // A wallet's first sign-in makes its account once (serialized per address), later ones find it.
      const address = `0x${randomBytes(20).toString("hex")}`;
      const walletAccount = {
        ...account,
        id: `acct_${randomBytes(4).toString("hex")}`,
        name: `wallet ${address}`,
        plan: "free" as const,
      };
      const firsts = await Promise.all([
        records.walletAccount(address, walletAccount, async () => {}),
        records.walletAccount(address, { ...walletAccount, id: `${walletAccount.id}b` }, async () => {}),
      ]);
      expect(firsts.filter((f) => f?.created)).toHaveLength(1);
      expect(new Set(firsts.map((f) => f?.account.id)).size).toBe(1);
      const again = await records.walletAccount(address, undefined, async () => {});
      expect(again?.created).toBe(false);
      // The plan is the record's own (0003_account_plans.sql), read back as written.
      expect(again?.account.plan).toBe("free");
      expect((await records.getAccount(account.id))?.plan).toBe("standard");
      expect(await records.walletAccount(`0x${"0".repeat(40)}`, undefined, async () => {})).toBeUndefined();
      // A failed hot-copy write rolls the record back: no half-made account.
      await expect(
        records.createAccount({ ...account, id: `${account.id}x` }, async () => {
          throw new Error("Redis refused");
        }),
      ).rejects.toThrow("Redis refused");
      expect(await records.getAccount(`${account.id}x`)).toBeUndefined();

      const day = at.slice(0, 10);
      const fold = [{ accountId: account.id, day, requests: 3, errors: 1, counted: 2 }];
      const used = [{ keyId: key.id, at }];
      const batch = (id: string) => ({ id, calls: 3, days: fold, lastUsed: used });
      expect(await records.foldUsage([batch("batch-1")])).toEqual({
        folded: 1,
        catchUps: [],
        totals: [{ accountId: account.id, day, requests: 3, errors: 1 }],
      });
      // batch-1 redelivered beside two new ones, in one transaction: only the new ones count.
      expect(await records.foldUsage([batch("batch-2"), batch("batch-1"), batch("batch-3")])).toEqual({
        folded: 2,
        catchUps: [],
        totals: [{ accountId: account.id, day, requests: 9, errors: 3 }],
      });
      expect(await records.foldUsage([batch("batch-3")])).toEqual({
        folded: 0,
        catchUps: [],
        totals: [{ accountId: account.id, day, requests: 9, errors: 3 }],
      });
      expect(await records.usageSince(day, undefined, 10)).toEqual([
        { accountId: account.id, day, requests: 9, errors: 3, counted: 6 },
      ]);
      expect((await records.listKeys(account.id))[0]).toMatchObject({ id: key.id, lastUsedAt: at });

      const ledger = createLedgerStore(database.db as unknown as Kysely<LedgerTables>);
      const entry = {
        id: `tok:settled:${randomBytes(4).toString("hex")}`,
        outcome: "settled" as const,
        requestId: "r1",
        endpoint: "/api/chain/block-number",
        network: "ethereum",
        scheme: "exact",
        payer: "0xAbCd000000000000000000000000000000000001",
        amount: "115792089237316195423570985008687907853269984665640564039457584007913129639935",
        asset: "0x0000000000000000000000000000000000000002",
        paymentNetwork: "eip155:84532",
        transaction: `0x${"ab".repeat(32)}`,
        channel: null,
        cumulative: null,
        reason: null,
        time: at,
      };
      expect(await ledger.record(entry, 1)).toBe(true);
      expect(await ledger.record(entry, 1)).toBe(false);
      const page = await ledger.list({ payer: entry.payer.toLowerCase() }, 10, undefined);
      // A uint256 amount keeps every digit.
      expect(page.entries).toEqual([entry]);
      expect(page.totals).toEqual([
        { outcome: "settled", asset: entry.asset, count: 1, amount: entry.amount },
      ]);
      // A released call is a sample of its payer's hour (one row lock per hour), listed beside.
      const release = {
        ...entry,
        id: `tok:released:${randomBytes(4).toString("hex")}`,
        outcome: "released" as const,
        transaction: null,
      };
      expect(await ledger.recordReleased(release, 2)).toBe("recorded");
      expect(await ledger.recordReleased(release, 2)).toBe("duplicate");
      const both = await ledger.list({ payer: entry.payer }, 10, undefined);
      expect(both.entries.map((e) => e.outcome).sort()).toEqual(["released", "settled"]);
    });
  },
);

describe("the embedded PostgreSQL keeps its data across restarts", () => {
  it("finds the rows of the previous run", async () => {
    const before = open(pglite!.url);
    const count = async (d: Database<QuotaTables & LedgerTables>) =>
      (await d.db.selectFrom("accounts").select(d.db.fn.countAll<number>().as("n")).executeTakeFirstOrThrow())
        .n;
    const rows = await count(before);
    expect(rows).toBeGreaterThan(0);
    await before.close();
    await pglite!.process.stop();
    pglite = await startEmbeddedPostgres(join(dataDir, "pglite"), await freePort(), () => {});
    const after = open(pglite.url);
    expect(await count(after)).toBe(rows);
    expect(await migrate(after.db, QUOTA)).toEqual([]);
    await after.close();
  });
});
