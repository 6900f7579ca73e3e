// One contract, two stores: every rule quota-meter keeps in a Lua script (Redis) and in its
// in-memory twin (the stand-in used when Redis is unreachable at startup) runs here against
// both, so the stand-in can never drift from production.
import { randomBytes, randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { RedisStore } from "../../services/quota-meter/src/store/redis-store.ts";
import type { AccountRecord, QuotaStore } from "../../services/quota-meter/src/store/types.ts";
import { recentDays, windowsAt } from "../../services/quota-meter/src/windows.ts";
import { eventually, sleep } from "../support/eventually.ts";
import { redis } from "./helpers.ts";
import { authorizeAt, contractStores, newAccount } from "./store-contract.support.ts";

const { prefix, stores: STORES, redisStore: redisStoreOf } = contractStores("contract");
let redisStore: RedisStore;
beforeAll(() => {
  redisStore = redisStoreOf();
});

const DAY = 24 * 60 * 60 * 1000;

describe.each(STORES)("quota store contract: %s", (_name, open) => {
  let store: QuotaStore;
  beforeAll(async () => {
    store = open();
    // A complete copy carries its seed mark (seeder.ts); without one, see "a copy with no generation".
    await store.setSeedMark(`contract-${randomUUID()}`);
  });

  const account = (plan: Partial<AccountRecord> = {}) => newAccount(store, plan);

  const at = authorizeAt;
  const read = (nowMs: number, keyHash: Buffer, days = 3, defaultBurst = 50) =>
    store.readUsage({ ...at(nowMs, keyHash, defaultBurst), days: recentDays(nowMs, days) });

  it("authorize counts both windows, refuses a spent one (monthly first) and never counts a refusal", async () => {
    const now = Date.now();
    const a = await account({ dailyLimit: 2, monthlyLimit: 3 });
    expect(await store.authorize(at(now, a.keyHash))).toMatchObject({
      decision: "allow",
      accountId: a.accountId,
      keyId: a.keyId,
      dayUsed: 1,
      monthUsed: 1,
    });
    expect((await store.authorize(at(now, a.keyHash))).dayUsed).toBe(2);
    expect(await store.authorize(at(now, a.keyHash))).toMatchObject({
      decision: "daily_limit_exceeded",
      dayUsed: 2,
      monthUsed: 2,
    });
    const both = await account({ dailyLimit: 1, monthlyLimit: 1 });
    await store.authorize(at(now, both.keyHash));
    expect((await store.authorize(at(now, both.keyHash))).decision).toBe("monthly_limit_exceeded");

    const unknown = await store.authorize(at(now, randomBytes(32)));
    expect(unknown.decision).toBe("invalid_key");
    const inactive = await account({ status: "past_due" });
    expect(await store.authorize(at(now, inactive.keyHash))).toMatchObject({
      decision: "subscription_inactive",
      status: "past_due",
    });
  });

  it("grants a lease of several units at once: at most a quarter of what each window has left, and what the burst guard holds", async () => {
    const now = 5_000_000;
    const a = await account({ dailyLimit: 10, monthlyLimit: 100 });
    // 10 left today: a lease of 4 gets 3 (a quarter, rounded up), so other gateways get theirs.
    expect(await store.authorize(at(now, a.keyHash, 0, 4))).toMatchObject({
      decision: "allow",
      units: 3,
      dayUsed: 3,
    });
    // Then 7 left: 2, 5 left: 2, 3 left: 1 ... down to the last unit, then the window refuses.
    const granted: number[] = [];
    for (let i = 0; i < 5; i++) granted.push((await store.authorize(at(now, a.keyHash, 0, 8))).units);
    expect(granted).toEqual([2, 2, 1, 1, 1]);
    expect(await store.authorize(at(now, a.keyHash, 0, 8))).toMatchObject({
      decision: "daily_limit_exceeded",
      units: 0,
      dayUsed: 10,
    });
    // The month's quarter clips too: 100 left, a lease of 64 gets 25.
    const m = await account({ dailyLimit: 0, monthlyLimit: 100 });
    expect((await store.authorize(at(now, m.keyHash, 0, 64))).units).toBe(25);
    // The burst guard (5 per second here) grants what its bucket holds, then refuses until it refills.
    const b = await account({ burstPerSecond: 5 });
    expect((await store.authorize(at(now, b.keyHash, 50, 8))).units).toBe(5);
    expect(await store.authorize(at(now, b.keyHash, 50, 8))).toMatchObject({
      decision: "rate_limited",
      units: 0,
    });
    expect((await store.authorize(at(now + 400, b.keyHash, 50, 8))).units).toBe(2);
    expect((await store.authorize(at(now + 1_000, b.keyHash, 50, 1))).units).toBe(1);
  });

  it("counts a request of N calls (a JSON-RPC batch) whole or not at all: windows and burst guard", async () => {
    const now = 7_000_000;
    const w = windowsAt(now);
    const batch = (keyHash: Buffer, calls: number, units = calls, burst = 0) =>
      store.authorize({ ...at(now, keyHash, burst, units), calls });
    const a = await account({ dailyLimit: 10, monthlyLimit: 100 });
    // A quarter of what is left would be 3: a batch of 4 gets its 4, at once.
    expect(await batch(a.keyHash, 4)).toMatchObject({ decision: "allow", units: 4, dayUsed: 4 });
    // 6 left, 7 calls: refused, nothing counted (not 6 of them).
    expect(await batch(a.keyHash, 7)).toMatchObject({
      decision: "daily_limit_exceeded",
      units: 0,
      dayUsed: 4,
    });
    expect(await store.readWindows(a.accountId, w, now)).toEqual({ dayUsed: 4, monthUsed: 4 });
    // Exactly what is left: served whole.
    expect(await batch(a.keyHash, 6)).toMatchObject({ decision: "allow", units: 6, dayUsed: 10 });
    // The month decides too.
    const m = await account({ monthlyLimit: 5 });
    expect(await batch(m.keyHash, 6)).toMatchObject({ decision: "monthly_limit_exceeded", monthUsed: 0 });
    // A lease asked with the batch holds at least its calls, more as the windows allow.
    const l = await account({ dailyLimit: 100 });
    expect(await batch(l.keyHash, 10, 64)).toMatchObject({ decision: "allow", units: 25, dayUsed: 25 });
    expect(await batch(l.keyHash, 30, 30)).toMatchObject({ decision: "allow", units: 30, dayUsed: 55 });
    // The burst guard (5 per second): 8 calls at once are refused and take no token, so 5 pass next.
    const b = await account({ burstPerSecond: 5 });
    expect(await batch(b.keyHash, 8, 8, 50)).toMatchObject({
      decision: "rate_limited",
      units: 0,
      dayUsed: 0,
    });
    expect(await batch(b.keyHash, 5, 5, 50)).toMatchObject({ decision: "allow", units: 5, dayUsed: 5 });
    expect(await batch(b.keyHash, 2, 2, 50)).toMatchObject({ decision: "rate_limited", dayUsed: 5 });
    expect(await store.readWindows(b.accountId, w, now)).toEqual({ dayUsed: 5, monthUsed: 5 });
  });

  it("takes a lease's unused units back, once per lease, never below zero", async () => {
    const now = Date.now();
    const w = windowsAt(now);
    const a = await account({ dailyLimit: 100, monthlyLimit: 100 });
    await store.authorize(at(now, a.keyHash, 0, 10));
    const back = {
      leaseId: `lease-${Math.random()}`,
      accountId: a.accountId,
      day: w.day,
      month: w.month,
      units: 7,
    };
    expect(await store.returnLease(back, DAY)).toBe(true);
    expect(await store.returnLease(back, DAY)).toBe(false); // resent report
    expect((await store.authorize(at(now, a.keyHash, 0, 1))).dayUsed).toBe(4);
    expect(await store.returnLease({ ...back, leaseId: `${back.leaseId}-2`, units: 50 }, DAY)).toBe(true);
    const usage = await read(now, a.keyHash, 1, 0);
    expect([usage.dayUsed, usage.monthUsed]).toEqual([0, 0]);
  });

  it("releases an Authorize the gateway gave up on: its units go back once, never with its lease's return too, and one not run yet counts nothing", async () => {
    const now = Date.now();
    const w = windowsAt(now);
    const a = await account({ dailyLimit: 100, monthlyLimit: 100 });
    const used = async () => (await store.readWindows(a.accountId, w, now)).dayUsed;
    await store.authorize(at(now, a.keyHash, 0, 1, randomUUID())); // served: stays counted
    const late = randomUUID();
    expect(await store.authorize(at(now, a.keyHash, 0, 8, late))).toMatchObject({
      decision: "allow",
      units: 8,
    });
    expect(await used()).toBe(9);
    expect(await store.release(late, DAY)).toBe(true);
    expect(await used()).toBe(1);
    expect(await store.release(late, DAY)).toBe(false); // resent report
    // quota-meter's own return of that grant (it answered past the deadline) finds it given back.
    const back = { leaseId: late, accountId: a.accountId, day: w.day, month: w.month, units: 8 };
    expect(await store.returnLease(back, DAY)).toBe(false);
    expect(await used()).toBe(1);

    // The other way round: returned first, then released: still given back once.
    const returned = randomUUID();
    await store.authorize(at(now, a.keyHash, 0, 4, returned));
    expect(await store.returnLease({ ...back, leaseId: returned, units: 4 }, DAY)).toBe(true);
    expect(await store.release(returned, DAY)).toBe(true);
    expect(await used()).toBe(1);

    // Released before its script ran (the release overtook it): it counts nothing when it runs.
    const overtaken = randomUUID();
    expect(await store.release(overtaken, DAY)).toBe(true);
    expect((await store.authorize(at(now, a.keyHash, 0, 4, overtaken))).decision).toBe("released");
    expect(await used()).toBe(1);
    // A release of an id never seen touches no window.
    expect(await store.release(randomUUID(), DAY)).toBe(true);
    expect(await used()).toBe(1);
  });

  it("reads usage in one step: the asked days, both windows and the plan, counting nothing", async () => {
    const now = Date.now();
    const a = await account({ dailyLimit: 100, monthlyLimit: 1000 });
    await store.authorize(at(now, a.keyHash));
    const days = recentDays(now, 3);
    await store.mergeUsage([
      { accountId: a.accountId, day: days[2]!, requests: 2, errors: 1 },
      { accountId: a.accountId, day: days[0]!, requests: 1, errors: 0 },
    ]);

    const usage = await read(now, a.keyHash);
    expect(usage).toMatchObject({
      decision: "allow",
      accountId: a.accountId,
      keyId: a.keyId,
      dayUsed: 1,
      monthUsed: 1,
      dayLimit: 100,
      monthLimit: 1000,
    });
    expect(usage.storedHash?.equals(a.keyHash)).toBe(true);
    expect(usage.days).toEqual([
      { day: days[0], requests: 1, errors: 0 },
      { day: days[1], requests: 0, errors: 0 },
      { day: days[2], requests: 2, errors: 1 },
    ]);
    // Reading is free: the windows did not move.
    expect((await read(now, a.keyHash)).dayUsed).toBe(1);
    expect((await store.authorize(at(now, a.keyHash))).dayUsed).toBe(2);
  });

  it("reads usage only for a live key of an active account", async () => {
    const now = Date.now();
    expect((await read(now, randomBytes(32))).decision).toBe("invalid_key");
    const a = await account();
    await store.createAccount({ ...a.account, status: "suspended" });
    const inactive = await read(now, a.keyHash);
    expect(inactive).toMatchObject({ decision: "subscription_inactive", accountId: a.accountId, days: [] });
    await store.createAccount({ ...a.account, status: "active" });
    expect((await read(now, a.keyHash)).decision).toBe("allow");
    await store.revokeKey(a.accountId, a.keyId, new Date().toISOString());
    expect((await read(now, a.keyHash)).decision).toBe("invalid_key");
  });

  it("one burst guard per account, shared by chain calls and usage reads", async () => {
    const now = Date.now();
    const a = await account({ burstPerSecond: 3 });
    expect((await store.authorize(at(now, a.keyHash))).decision).toBe("allow");
    expect((await read(now, a.keyHash)).decision).toBe("allow");
    expect((await store.authorize(at(now, a.keyHash))).decision).toBe("allow");
    // Three calls at once spent the burst: a usage read and a chain call are both refused.
    expect(await read(now, a.keyHash)).toMatchObject({ decision: "rate_limited", days: [] });
    expect((await store.authorize(at(now, a.keyHash))).decision).toBe("rate_limited");
    // A second later the guard has refilled.
    expect((await read(now + 1_000, a.keyHash)).decision).toBe("allow");

    // Accounts without their own rate use the default the caller passes.
    const b = await account({ burstPerSecond: 0 });
    expect((await read(now, b.keyHash, 3, 1)).decision).toBe("allow");
    expect((await read(now, b.keyHash, 3, 1)).decision).toBe("rate_limited");
  });

  it("refunds once per (account, request id), never below zero", async () => {
    const now = Date.now();
    const w = windowsAt(now);
    const a = await account();
    const b = await account();
    await store.authorize(at(now, a.keyHash));
    await store.authorize(at(now, a.keyHash));
    await store.authorize(at(now, b.keyHash));
    const refund = (accountId: string, requestId: string) =>
      store.refund({ requestId, accountId, day: w.day, month: w.month }, DAY);

    expect(await refund(a.accountId, "r1")).toBe(true);
    expect(await refund(a.accountId, "r1")).toBe(false); // a resent report
    // The same id for another account is another refund: ids never cross accounts.
    expect(await refund(b.accountId, "r1")).toBe(true);
    expect(await refund(b.accountId, "r2")).toBe(true); // nothing left to give back
    const usageA = await read(now, a.keyHash);
    const usageB = await read(now, b.keyHash);
    expect([usageA.dayUsed, usageA.monthUsed]).toEqual([1, 1]);
    expect([usageB.dayUsed, usageB.monthUsed]).toEqual([0, 0]);
  });

  it("merges per-day usage totals as maxima: any order, any repetition, the largest stays", async () => {
    const now = Date.now();
    const [yesterday, today] = recentDays(now, 2) as [string, string];
    const a = await account();
    const b = await account();
    const newer = [
      { accountId: a.accountId, day: today, requests: 6, errors: 2 },
      { accountId: a.accountId, day: yesterday, requests: 2, errors: 0 },
      { accountId: b.accountId, day: today, requests: 5, errors: 5 },
    ];
    await store.mergeUsage(newer);
    // An older total arriving late (another replica, a replay) and a repeat change nothing.
    await store.mergeUsage([{ accountId: a.accountId, day: today, requests: 3, errors: 1 }]);
    await store.mergeUsage(newer);
    expect((await read(now, a.keyHash, 2)).days).toEqual([
      { day: yesterday, requests: 2, errors: 0 },
      { day: today, requests: 6, errors: 2 },
    ]);
    expect((await read(now, b.keyHash, 1)).days).toEqual([{ day: today, requests: 5, errors: 5 }]);
  });

  it("restores window counts after a loss, keeping a counter that exists", async () => {
    const now = Date.now();
    const w = windowsAt(now);
    const a = await account({ dailyLimit: 10, monthlyLimit: 100 });
    const b = await account({ dailyLimit: 10, monthlyLimit: 100 });
    await store.authorize(at(now, b.keyHash)); // b's counters exist: 1 and 1
    const restore = (accountId: string, day: number, month: number) => [
      { accountId, kind: "day" as const, window: w.day, count: day, ttlMs: w.dayTtlMs },
      { accountId, kind: "month" as const, window: w.month, count: month, ttlMs: w.monthTtlMs },
    ];
    await store.restoreWindows([...restore(a.accountId, 4, 40), ...restore(b.accountId, 7, 70)]);
    expect(await store.authorize(at(now, a.keyHash))).toMatchObject({ dayUsed: 5, monthUsed: 41 });
    expect(await store.authorize(at(now, b.keyHash))).toMatchObject({ dayUsed: 2, monthUsed: 2 });
  });

  it("holds: not ready while held, and a seed mark and lock of its own", async () => {
    expect(store.isReady()).toBe(true);
    store.hold(true);
    expect(store.isReady()).toBe(false);
    store.hold(false);
    expect(store.isReady()).toBe(true);
    const mark = `mark-${Math.random()}`;
    await store.setSeedMark(mark);
    expect(await store.seedMark()).toBe(mark);
    expect(await store.lockSeeding("me", 5_000)).toBe(true);
    await store.unlockSeeding("me");
    expect(await store.lockSeeding("me", 5_000)).toBe(true);
    await store.unlockSeeding("me");
  });
});

describe("seeding lock (Redis)", () => {
  it("is its owner's again when asked twice (a taking whose answer was lost), not waited out for its TTL; another owner waits", async () => {
    const owner = `owner-${Math.random()}`;
    expect(await redisStore.lockSeeding(owner, 60_000)).toBe(true);
    expect(await redisStore.lockSeeding(owner, 60_000)).toBe(true);
    expect(await redisStore.lockSeeding(`other-${Math.random()}`, 60_000)).toBe(false);
    await redisStore.unlockSeeding(owner);
    const next = `other-${Math.random()}`;
    expect(await redisStore.lockSeeding(next, 60_000)).toBe(true);
    await redisStore.unlockSeeding(next);
  });
});

describe("Redis round trips", () => {
  it("a usage read of 366 days is ONE command sent to Redis", async () => {
    const { keyHash } = await newAccount(redisStore);
    const now = Date.now();
    const query = {
      keyHash,
      nowMs: now,
      windows: windowsAt(now),
      days: recentDays(now, 366),
      defaultBurst: 50,
    };
    await redisStore.readUsage(query); // the script is loaded

    // MONITOR lists every command Redis runs; the script's own calls show as "lua".
    const monitor = await redis();
    const seen: string[] = [];
    await monitor.monitor((line: string) => {
      if (line.includes(prefix) && !line.includes(" lua]")) seen.push(line);
    });
    try {
      const usage = await redisStore.readUsage(query);
      expect(usage.days).toHaveLength(366);
      await eventually(
        () => seen.length,
        (n) => n >= 1,
        10_000,
        10,
      );
      // time-based: proves no second command follows the first (MONITOR's lines come a moment late).
      await sleep(200);
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatch(/"evalsha"/i);
    } finally {
      monitor.destroy();
    }
  });
});
