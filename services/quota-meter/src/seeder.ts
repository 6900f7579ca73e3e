// Re-seeding: Redis holds the hot copy of PostgreSQL's accounts and live keys (what the Lua scripts
// read) and the quota windows, and keeps nothing on disk. A complete copy carries a mark (`seeded`);
// a Redis that comes back without it (a restart, a failover that lost writes, a flush) is seeded
// again from PostgreSQL with no operator action: the windows from the usage rollups, the per-day
// usage, every account, every live key, then the mark. Checked when the connection comes back and
// every `checkEveryMs` besides. While the copy is incomplete the store reports itself not ready, so
// Authorize fails open (known keys served unmetered, spec 8.3) instead of refusing keys it lost.
import { randomUUID } from "node:crypto";
import type { Logger } from "@tollgate/platform";
import type { Records } from "./db/records.ts";
import type { QuotaStore, WindowCount } from "./store/types.ts";
import { dayId, windowsAt } from "./windows.ts";

const PAGE = 500;
/** Admin writes that may have raced a seed are re-applied from this far before it began. */
const RACE_MARGIN_MS = 60_000;
/** One replica seeds at a time; the lock outlives any seed a crash interrupts. */
const LOCK_TTL_MS = 60_000;
/** The most days of per-day usage GetUsage serves. */
const USAGE_DAYS = 366;
const DAY_MS = 24 * 3_600_000;

export interface SeederDeps {
  store: QuotaStore;
  records: Records;
  now: () => number;
  logger: Logger;
  /** Resolves once the schema is migrated. */
  schemaReady: Promise<void>;
  checkEveryMs: number;
  onSeeded?: (stats: SeedStats) => void;
}

export interface SeedStats {
  accounts: number;
  keys: number;
  windows: number;
  usageDays: number;
  ms: number;
}

export interface Seeder {
  /** Resolves once the store holds a complete copy (checked now, seeded if it does not). */
  check(): Promise<void>;
  stop(): void;
}

export function startSeeder(deps: SeederDeps): Seeder {
  const { store, records, logger } = deps;
  const owner = randomUUID();
  let running: Promise<void> | undefined;
  let stopped = false;
  /** The copy generation whose credit balances this process found seeded. */
  let adopted = "";

  /** The windows of now, rebuilt from the rollups: today's and this month's counted calls. */
  async function rebuildWindows(nowMs: number): Promise<number> {
    const w = windowsAt(nowMs);
    const monthStart = `${w.month}-01`;
    const month = new Map<string, number>();
    const counts: WindowCount[] = [];
    let after: { accountId: string; day: string } | undefined;
    for (;;) {
      const rows = await records.usageSince(monthStart, after, PAGE);
      for (const r of rows) {
        if (r.counted <= 0) continue;
        month.set(r.accountId, (month.get(r.accountId) ?? 0) + r.counted);
        if (r.day === w.day)
          counts.push({
            accountId: r.accountId,
            kind: "day",
            window: w.day,
            count: r.counted,
            ttlMs: w.dayTtlMs,
          });
      }
      const last = rows.at(-1);
      if (!last || rows.length < PAGE) break;
      after = { accountId: last.accountId, day: last.day };
    }
    for (const [accountId, count] of month)
      counts.push({ accountId, kind: "month", window: w.month, count, ttlMs: w.monthTtlMs });
    await store.restoreWindows(counts);
    return counts.length;
  }

  async function seedUsage(nowMs: number): Promise<number> {
    let n = 0;
    let after: { accountId: string; day: string } | undefined;
    for (;;) {
      const rows = await records.usageSince(dayId(nowMs - (USAGE_DAYS - 1) * DAY_MS), after, PAGE);
      await store.mergeUsage(rows);
      n += rows.length;
      const last = rows.at(-1);
      if (!last || rows.length < PAGE) return n;
      after = { accountId: last.accountId, day: last.day };
    }
  }

  async function seedAccounts(): Promise<number> {
    let n = 0;
    for (let after = ""; ; ) {
      const page = await records.accountsPage(after, PAGE);
      await Promise.all(page.map((a) => store.createAccount(a)));
      n += page.length;
      if (page.length < PAGE) return n;
      after = page.at(-1)?.id ?? after;
    }
  }

  async function seedKeys(): Promise<number> {
    let n = 0;
    for (let after = ""; ; ) {
      const page = await records.liveKeysPage(after, PAGE);
      await Promise.all(page.map(({ key, hash }) => store.createKey(key, hash)));
      n += page.length;
      if (page.length < PAGE) return n;
      after = page.at(-1)?.key.id ?? after;
    }
  }

  async function seedWallets(): Promise<number> {
    let n = 0;
    for (let after = ""; ; ) {
      const page = await records.walletsPage(after, PAGE);
      await Promise.all(page.map((w) => store.bindWallet(w.address, w.accountId)));
      n += page.length;
      if (page.length < PAGE) return n;
      after = page.at(-1)?.address ?? after;
    }
  }

  /**
   * The credit balances of the copy `mark` names, from the ledger (records.seedCredits: no ledger
   * row commits between the read and the generation's record), with the wallets sign-in-with-x
   * looks accounts up by. False when that generation was seeded before.
   */
  async function seedCredits(mark: string): Promise<boolean> {
    await seedWallets();
    return records.seedCredits(mark, (balances) => store.setCredits(balances));
  }

  async function seed(): Promise<void> {
    const started = Date.now();
    const nowMs = deps.now();
    const mark = `${new Date(nowMs).toISOString()} ${owner}`;
    // Windows first, keys last: a key that answers finds its account and its counts in place.
    const windows = await rebuildWindows(nowMs);
    const usageDays = await seedUsage(nowMs);
    const accounts = await seedAccounts();
    const keys = await seedKeys();
    // An admin write committed while the pages were read may have been overwritten by them:
    // re-apply every account change and revocation since shortly before the seed began.
    const since = new Date(started - RACE_MARGIN_MS).toISOString();
    const changed = await records.changedSince(since);
    await Promise.all(changed.accounts.map((a) => store.createAccount(a)));
    await Promise.all(changed.revoked.map((k) => store.revokeKey(k.accountId, k.id, k.revokedAt)));
    await seedCredits(mark);
    await store.setSeedMark(mark);
    // Complete: meter again now, not after the next look at the mark (and before onSeeded reports it).
    store.hold(false);
    const stats = { accounts, keys, windows, usageDays, ms: Date.now() - started };
    // A lost Redis copy deserves a warning; the stand-in is seeded at every start.
    const level = store.kind === "redis" ? "warn" : "info";
    logger[level]({ ...stats, store: store.kind }, "the hot copy held no records: seeded it from PostgreSQL");
    deps.onSeeded?.(stats);
  }

  /**
   * One pass: with the mark there, the copy is complete (and the store released); without it, seed
   * under the lock, or wait while another replica seeds. PostgreSQL is needed only to seed: a Redis
   * blip during a database outage costs nothing when Redis kept its data.
   */
  async function pass(): Promise<void> {
    for (;;) {
      if (stopped) return;
      const mark = await store.seedMark();
      if (mark) {
        // A copy seeded before credits existed (an upgrade): its balances and wallets, once.
        if (adopted !== mark) {
          await deps.schemaReady;
          if (!(await records.knowsGeneration(mark)) && (await seedCredits(mark)))
            logger.info({ mark }, "credit balances seeded into the existing copy");
          adopted = mark;
        }
        store.hold(false);
        return;
      }
      store.hold(true);
      await deps.schemaReady;
      if (await store.lockSeeding(owner, LOCK_TTL_MS)) {
        try {
          if (!(await store.seedMark())) await seed();
        } finally {
          await store.unlockSeeding(owner).catch(() => undefined);
        }
      } else {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  let lastWarn = 0;
  function check(): Promise<void> {
    // A failed pass keeps the store held when it was: a lost copy fails open until it is seeded.
    running ??= pass()
      .catch((err: unknown) => {
        if (Date.now() - lastWarn < 60_000) return;
        lastWarn = Date.now();
        logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          "could not check or re-seed the Redis copy of the records; retrying",
        );
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  // A reconnect may be a Redis that restarted empty: fail open until the mark is checked.
  store.onConnect(() => {
    store.hold(true);
    void check();
  });
  const timer = setInterval(() => void check(), deps.checkEveryMs);
  timer.unref();
  return {
    check,
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}
