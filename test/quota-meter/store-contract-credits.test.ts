// The credits half of the quota store contract (store-contract.test.ts has the rest): drawing a
// credit lease when the windows are spent or the account is credits-only, refunds and releases of
// a draw, returns and settlement of credit leases, ledger entries applied once to their own copy
// generation, wallets. One suite, both stores.
import { randomBytes, randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { MemoryStore } from "../../services/quota-meter/src/store/memory-store.ts";
import { openRedisStore } from "../../services/quota-meter/src/store/redis-store.ts";
import {
  type AccountRecord,
  CopyNotReady,
  type QuotaStore,
} from "../../services/quota-meter/src/store/types.ts";
import { windowsAt } from "../../services/quota-meter/src/windows.ts";
import { REDIS_PORT, silentLogger } from "./helpers.ts";
import { authorizeAt as at, contractStores, newAccount } from "./store-contract.support.ts";

const { prefix, stores } = contractStores("contract-credits");

describe.each(stores)("credits contract: %s", (_name, open) => {
  let store: QuotaStore;
  const account = (plan: Partial<AccountRecord> = {}) => newAccount(store, plan);
  // The copy's generation: what draws are made in and entries are applied to.
  const generation = `gen-${randomUUID()}`;
  const PRICE = 3_000;
  beforeAll(async () => {
    store = open();
    await store.setSeedMark(generation);
  });
  const credit = (accountId: string, delta: number, cause = randomUUID(), gen = generation) =>
    store.applyCredits([{ cause, accountId, delta, generation: gen }], 60_000);

  it("a spent window draws the price from the credits (not counted in the windows), then refuses when they run short", async () => {
    const now = Date.now();
    const a = await account({ dailyLimit: 1, monthlyLimit: 0 });
    expect(await credit(a.accountId, PRICE + 5)).toEqual([PRICE + 5]);
    // On the plan: a unit, nothing drawn, even with a price.
    expect(await store.authorize(at(now, a.keyHash, 50, 4, "", PRICE))).toMatchObject({
      decision: "allow",
      units: 1,
      dayUsed: 1,
    });
    const first = await store.authorize(at(now, a.keyHash, 50, 4, "", PRICE));
    // Four calls wanted, but a lease takes at most a quarter of what the balance covers: this one.
    expect(first).toMatchObject({ decision: "allow", units: 1, dayUsed: 1 });
    expect(first.credits).toEqual({ drawn: PRICE, remaining: 5, epoch: generation });
    const short = await store.authorize(at(now, a.keyHash, 50, 4, "", PRICE));
    expect(short).toMatchObject({ decision: "daily_limit_exceeded", units: 0, balance: 5, dayUsed: 1 });
    expect(await store.readCredits(a.accountId)).toBe(5);
    // No price named (an older gateway): the refusal as before, nothing drawn.
    expect(await store.authorize(at(now, a.keyHash))).toMatchObject({ decision: "daily_limit_exceeded" });
  });

  it("a credits-only account draws from its first call and is refused with no credits", async () => {
    const now = Date.now();
    const a = await account({ creditsOnly: true, dailyLimit: 100 });
    expect(await store.authorize(at(now, a.keyHash, 50, 1, "", PRICE))).toMatchObject({
      decision: "no_credits",
      balance: 0,
    });
    await credit(a.accountId, PRICE);
    const paid = await store.authorize(at(now, a.keyHash, 50, 1, "", PRICE));
    // No plan windows apply: none is reported (the gateway sends no X-Quota-* for it).
    expect(paid).toMatchObject({
      decision: "allow",
      units: 1,
      dayUsed: 0,
      dayLimit: 0,
      monthLimit: 0,
      credits: { drawn: PRICE, remaining: 0 },
    });
    expect(await store.authorize(at(now, a.keyHash, 50, 1, "", PRICE))).toMatchObject({
      decision: "no_credits",
    });
  });

  it("a batch the plan cannot cover whole draws its whole price from the credits (one request, never part of it), or nothing", async () => {
    const now = Date.now();
    const w = windowsAt(now);
    const batch = (keyHash: Buffer, calls: number, price: number, units = calls) =>
      store.authorize({ ...at(now, keyHash, 0, units, "", price), calls });
    const a = await account({ dailyLimit: 10, monthlyLimit: 0 });
    await credit(a.accountId, 10 * PRICE);
    expect(await batch(a.keyHash, 7, 7 * PRICE)).toMatchObject({ decision: "allow", units: 7, dayUsed: 7 });
    // 3 plan units left, 5 calls: the batch's price from the credits, the windows untouched, and
    // the lease is this request alone (however many were asked for).
    const paid = await batch(a.keyHash, 5, 5 * PRICE, 40);
    expect(paid).toMatchObject({ decision: "allow", units: 1, dayUsed: 7 });
    expect(paid.credits).toMatchObject({ drawn: 5 * PRICE, remaining: 5 * PRICE });
    // No price (a gateway that does not pay this from credits): refused, nothing counted.
    expect(await batch(a.keyHash, 5, 0)).toMatchObject({ decision: "daily_limit_exceeded", units: 0 });
    // A price the credits do not cover: refused, nothing drawn nor counted.
    expect(await batch(a.keyHash, 6, 6 * PRICE)).toMatchObject({
      decision: "daily_limit_exceeded",
      balance: 5 * PRICE,
    });
    expect(await store.readWindows(a.accountId, w, now)).toEqual({ dayUsed: 7, monthUsed: 7 });
    expect(await store.readCredits(a.accountId)).toBe(5 * PRICE);
    // Credits-only, over the burst guard (5 per second): refused whole, no token and no credit taken.
    const c = await account({ creditsOnly: true, burstPerSecond: 5 });
    await credit(c.accountId, 100 * PRICE);
    expect(await batch(c.keyHash, 8, 8 * PRICE)).toMatchObject({ decision: "rate_limited" });
    expect(await store.readCredits(c.accountId)).toBe(100 * PRICE);
    expect(await batch(c.keyHash, 5, 5 * PRICE)).toMatchObject({
      decision: "allow",
      units: 1,
      credits: { drawn: 5 * PRICE, remaining: 95 * PRICE },
    });
  });

  it("a refund gives a draw back once, and only to the copy it was drawn from", async () => {
    const now = Date.now();
    const w = windowsAt(now);
    const a = await account({ creditsOnly: true });
    await credit(a.accountId, 2 * PRICE);
    const drawn = await store.authorize(at(now, a.keyHash, 50, 1, "", PRICE));
    const refund = {
      requestId: randomUUID(),
      accountId: a.accountId,
      day: w.day,
      month: w.month,
      credits: { drawn: PRICE, epoch: drawn.credits?.epoch ?? "", lease: "" },
    };
    expect(await store.refund(refund, 60_000)).toBe(true);
    expect(await store.refund(refund, 60_000)).toBe(false);
    expect(await store.readCredits(a.accountId)).toBe(2 * PRICE);
    // Drawn in a copy lost since: the current one was seeded without the draw, nothing to give back.
    await store.authorize(at(now, a.keyHash, 50, 1, "", PRICE));
    const stale = {
      ...refund,
      requestId: randomUUID(),
      credits: { drawn: PRICE, epoch: "an-older-copy", lease: "" },
    };
    expect(await store.refund(stale, 60_000)).toBe(true);
    expect(await store.readCredits(a.accountId)).toBe(PRICE);
  });

  it("a release gives a draw back once; a release first makes the draw count nothing", async () => {
    const now = Date.now();
    const a = await account({ creditsOnly: true });
    await credit(a.accountId, PRICE);
    const id = randomUUID();
    expect((await store.authorize(at(now, a.keyHash, 50, 1, id, PRICE))).credits?.drawn).toBe(PRICE);
    expect(await store.readCredits(a.accountId)).toBe(0);
    expect(await store.release(id, 60_000)).toBe(true);
    expect(await store.release(id, 60_000)).toBe(false);
    expect(await store.readCredits(a.accountId)).toBe(PRICE);
    const early = randomUUID();
    expect(await store.release(early, 60_000)).toBe(true);
    expect(await store.authorize(at(now, a.keyHash, 50, 1, early, PRICE))).toMatchObject({
      decision: "released",
    });
    expect(await store.readCredits(a.accountId)).toBe(PRICE);
  });

  it("a credit lease draws a block: what was wanted, at most a quarter of what the balance covers, within the burst guard", async () => {
    const now = Date.now();
    const a = await account({ creditsOnly: true });
    await credit(a.accountId, 100 * PRICE);
    const ten = await store.authorize(at(now, a.keyHash, 1_000, 10, randomUUID(), PRICE));
    expect(ten).toMatchObject({
      decision: "allow",
      units: 10,
      credits: { drawn: 10 * PRICE, remaining: 90 * PRICE },
    });
    // 90 calls left: a quarter is 22.
    const big = await store.authorize(at(now, a.keyHash, 1_000, 64, randomUUID(), PRICE));
    expect(big).toMatchObject({ units: 22, credits: { drawn: 22 * PRICE, remaining: 68 * PRICE } });
    // A guard of 5 a second: the first lease takes a token, the second its first call's and the 3 left.
    const b = await account({ creditsOnly: true, burstPerSecond: 5 });
    await credit(b.accountId, 100 * PRICE);
    expect((await store.authorize(at(now, b.keyHash, 50, 1, randomUUID(), PRICE))).units).toBe(1);
    expect((await store.authorize(at(now, b.keyHash, 50, 10, randomUUID(), PRICE))).units).toBe(4);
    expect(await store.readCredits(b.accountId)).toBe(95 * PRICE);
  });

  it("a returned credit lease gives back its rest once, never more than it drew less its reported use", async () => {
    const now = Date.now();
    const a = await account({ creditsOnly: true });
    await credit(a.accountId, 100 * PRICE);
    const id = randomUUID();
    expect((await store.authorize(at(now, a.keyHash, 1_000, 10, id, PRICE))).units).toBe(10);
    expect(await store.useCreditLeases(randomUUID(), [{ leaseId: id, credits: 3 * PRICE }], 60_000)).toBe(
      true,
    );
    // Shown: the balance with what the lease still holds (10 drawn, 3 used).
    expect(await store.readCredits(a.accountId)).toBe(90 * PRICE);
    expect(await store.readShownCredits(a.accountId)).toBe(97 * PRICE);
    // The operator's account show lists it open; returned, it is gone.
    expect(await store.openCreditLeases(a.accountId)).toEqual([{ id, amount: 10 * PRICE, used: 3 * PRICE }]);
    expect(await store.returnCreditLease(id, 7 * PRICE)).toBe(true);
    expect(await store.returnCreditLease(id, 7 * PRICE)).toBe(false);
    expect(await store.openCreditLeases(a.accountId)).toEqual([]);
    expect(await store.readCredits(a.accountId)).toBe(97 * PRICE);
    // A return claiming more than the lease has left after its use gets only what is left.
    const over = randomUUID();
    await store.authorize(at(now, a.keyHash, 1_000, 10, over, PRICE));
    await store.useCreditLeases(randomUUID(), [{ leaseId: over, credits: 6 * PRICE }], 60_000);
    expect(await store.returnCreditLease(over, 10 * PRICE)).toBe(true);
    expect(await store.readCredits(a.accountId)).toBe(91 * PRICE);
    expect(await store.readShownCredits(a.accountId)).toBe(91 * PRICE);
  });

  it("an Authorize closing the key's last credit lease returns its rest before it draws: the balance it answers is exact", async () => {
    const now = Date.now();
    const a = await account({ creditsOnly: true });
    await credit(a.accountId, 100 * PRICE);
    const first = randomUUID();
    expect((await store.authorize(at(now, a.keyHash, 1_000, 2, first, PRICE))).credits?.remaining).toBe(
      98 * PRICE,
    );
    const next = await store.authorize({
      ...at(now, a.keyHash, 1_000, 4, randomUUID(), 5 * PRICE),
      closeCreditLease: { leaseId: first, creditsLeft: PRICE },
    });
    // 99 back, then 4 calls at 5.
    expect(next).toMatchObject({ units: 4, credits: { drawn: 20 * PRICE, remaining: 79 * PRICE } });
    expect(await store.returnCreditLease(first, PRICE)).toBe(false);
    expect(await store.readCredits(a.accountId)).toBe(79 * PRICE);
  });

  it("a lease never returned is settled from its use, once; a use resent is counted once; a late use is taken again, a late refund or return gives nothing", async () => {
    const now = Date.now();
    const w = windowsAt(now);
    const a = await account({ creditsOnly: true });
    await credit(a.accountId, 100 * PRICE);
    const id = randomUUID();
    // Due for settlement already (its gateway died long ago).
    await store.authorize(at(now, a.keyHash, 1_000, 10, id, PRICE, "", now - 1));
    const batch = randomUUID();
    expect(await store.useCreditLeases(batch, [{ leaseId: id, credits: 4 * PRICE }], 60_000)).toBe(true);
    expect(await store.useCreditLeases(batch, [{ leaseId: id, credits: 4 * PRICE }], 60_000)).toBe(false);
    expect(await store.expireCreditLeases(now, 1_000)).toBeGreaterThanOrEqual(1);
    // Drew 10, used 4: 6 back.
    expect(await store.readCredits(a.accountId)).toBe(96 * PRICE);
    expect(await store.expireCreditLeases(now, 1_000)).toBe(0);
    expect(await store.readCredits(a.accountId)).toBe(96 * PRICE);
    // Two more calls of that lease reported late: taken again.
    expect(await store.useCreditLeases(randomUUID(), [{ leaseId: id, credits: 2 * PRICE }], 60_000)).toBe(
      true,
    );
    expect(await store.readCredits(a.accountId)).toBe(94 * PRICE);
    // An unanswered call's refund: the settlement gave its draw back already.
    const refund = { requestId: randomUUID(), accountId: a.accountId, day: w.day, month: w.month };
    expect(
      await store.refund({ ...refund, credits: { drawn: PRICE, epoch: generation, lease: id } }, 60_000),
    ).toBe(true);
    expect(await store.returnCreditLease(id, 3 * PRICE)).toBe(false);
    expect(await store.readCredits(a.accountId)).toBe(94 * PRICE);
  });

  it("a refund from an open lease counts as its use: its settlement does not give it back twice; a release ends the lease", async () => {
    const now = Date.now();
    const w = windowsAt(now);
    const a = await account({ creditsOnly: true });
    await credit(a.accountId, 100 * PRICE);
    const id = randomUUID();
    await store.authorize(at(now, a.keyHash, 1_000, 10, id, PRICE, "", now - 1));
    const refund = { requestId: randomUUID(), accountId: a.accountId, day: w.day, month: w.month };
    await store.refund({ ...refund, credits: { drawn: PRICE, epoch: generation, lease: id } }, 60_000);
    expect(await store.readCredits(a.accountId)).toBe(91 * PRICE);
    await store.expireCreditLeases(now, 1_000);
    expect(await store.readCredits(a.accountId)).toBe(100 * PRICE);
    // Released (the gateway gave up on its Authorize): all of it back, and nothing to settle after.
    const released = randomUUID();
    await store.authorize(at(now, a.keyHash, 1_000, 10, released, PRICE, "", now - 1));
    expect(await store.release(released, 60_000)).toBe(true);
    await store.expireCreditLeases(now, 1_000);
    expect(await store.returnCreditLease(released, 10 * PRICE)).toBe(false);
    expect(await store.readCredits(a.accountId)).toBe(100 * PRICE);
  });

  it("a lease drawn from a copy lost since gives nothing back to the new copy", async () => {
    const now = Date.now();
    const a = await account({ creditsOnly: true });
    await credit(a.accountId, 100 * PRICE);
    const returned = randomUUID();
    const settled = randomUUID();
    await store.authorize(at(now, a.keyHash, 1_000, 10, returned, PRICE));
    await store.authorize(at(now, a.keyHash, 1_000, 10, settled, PRICE, "", now - 1));
    // Seeded again from the ledger, which has no draw of either lease: 100 calls' worth.
    const next = `gen-${randomUUID()}`;
    await store.setSeedMark(next);
    try {
      await store.setCredits([{ accountId: a.accountId, balance: 100 * PRICE }]);
      await store.returnCreditLease(returned, 10 * PRICE);
      await store.expireCreditLeases(now, 1_000);
      expect(await store.readCredits(a.accountId)).toBe(100 * PRICE);
    } finally {
      await store.setSeedMark(generation);
    }
  });

  it("applies an entry once per cause, only to its own generation", async () => {
    const a = await account();
    const cause = randomUUID();
    expect(await credit(a.accountId, 1_000_000, cause)).toEqual([1_000_000]);
    expect(await credit(a.accountId, 1_000_000, cause)).toEqual([1_000_000]);
    // Written in another generation: that copy's seed read it (or will), so this one is left alone.
    expect(await credit(a.accountId, 7, randomUUID(), "another-generation")).toEqual([1_000_000]);
    // A catch-up draw may take the balance below zero: calls are refused until a top-up.
    expect(await credit(a.accountId, -1_000_003)).toEqual([-3]);
    await store.setCredits([{ accountId: a.accountId, balance: 42 }]);
    expect(await store.readCredits(a.accountId)).toBe(42);
  });

  it("serves a wallet bound to an account; an unbound wallet has no account", async () => {
    const now = Date.now();
    const a = await account({ dailyLimit: 5 });
    const wallet = `0x${randomBytes(20).toString("hex")}`;
    expect(await store.authorize(at(now, Buffer.alloc(0), 50, 1, "", 0, wallet))).toMatchObject({
      decision: "no_account",
    });
    await store.bindWallet(wallet, a.accountId);
    expect(await store.authorize(at(now, Buffer.alloc(0), 50, 1, "", 0, wallet))).toMatchObject({
      decision: "allow",
      accountId: a.accountId,
      keyId: "",
      dayUsed: 1,
    });
  });
});

describe("a copy with no generation (being seeded)", () => {
  it.each([
    ["redis (Lua scripts)", "redis"],
    ["memory (the stand-in)", "memory"],
  ])("%s refuses to apply credits: they stay owed", async (_name, kind) => {
    const store =
      kind === "memory"
        ? new MemoryStore()
        : await openRedisStore({
            url: `redis://127.0.0.1:${REDIS_PORT}`,
            prefix: `${prefix}unseeded:`,
            logger: silentLogger(),
            connectTimeoutMs: 2_000,
            giveUp: true,
          });
    try {
      await expect(
        store!.applyCredits([{ cause: "c", accountId: "a", delta: 1, generation: "g" }], 60_000),
      ).rejects.toBeInstanceOf(CopyNotReady);
      // Redis restarted empty: a key it does not find is not called unknown (the meter fails open).
      const now = Date.now();
      const unknown = await store!.authorize({
        keyHash: randomBytes(32),
        wallet: "",
        priceAtomic: 0,
        nowMs: now,
        windows: windowsAt(now),
        defaultBurst: 50,
        units: 1,
        calls: 1,
        authorizationId: "",
        creditLeaseSettleAt: now + 60_000,
      });
      expect(unknown.decision).toBe(kind === "redis" ? "unseeded" : "invalid_key");
    } finally {
      await store?.close();
    }
  });
});
