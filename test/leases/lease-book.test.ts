// The gateway's lease book driven with plain objects (a quota-meter answer made in the test):
// one Authorize per key in flight, leases that grow with a key's pace, units numbered once,
// unused units handed back when a lease ends, and a unit without an answer served again.
import { describe, expect, it } from "vitest";
import type { Authorization } from "../../services/gateway/src/clients/quota-meter.ts";
import { createLeaseBook, createUnknownKeyLimiter } from "../../services/gateway/src/leases.ts";

/** The fake meter answers a turn of the event loop later, as a round trip does. */
// time-based: not a wait for anything: the fakes' answer is async, so concurrent asks interleave.
const aTurnLater = () => new Promise((r) => setImmediate(r));

let clock = 1_000;
const now = () => clock;

/** quota-meter as the test scripts it: grants what is asked, counting from `used`. */
function meter(opts: { cap?: number; decision?: Authorization["decision"]; metered?: boolean } = {}) {
  let used = 0;
  const asked: number[] = [];
  const authorize = async (want: number): Promise<Authorization> => {
    asked.push(want);
    await aTurnLater();
    const units = Math.min(want, opts.cap ?? want);
    used += units;
    return {
      decision: opts.decision ?? "DECISION_ALLOW",
      accountId: "acct",
      keyId: "key",
      metered: opts.metered ?? true,
      quota: { dayLimit: 1000, dayUsed: used - units + 1, monthLimit: 0, monthUsed: 0 },
      dayWindow: "2026-11-23",
      monthWindow: "2026-11",
      lease: opts.metered === false ? null : { id: `lease-${asked.length}`, units, ttlMs: 1_000 },
    } as Authorization;
  };
  return { authorize, asked };
}

describe("lease book (quota-meter's answers made in the test)", () => {
  it("asks quota-meter once for concurrent calls of one key, numbers every unit once, and grows with the key's pace", async () => {
    const book = createLeaseBook({ maxUnits: 64, now });
    const m = meter();
    const first = await Promise.all(Array.from({ length: 10 }, () => book.grant("k", m.authorize)));
    // 1, then 2, then 4, then 8: each lease used up before it ends doubles the next.
    expect(m.asked).toEqual([1, 2, 4, 8]);
    const numbers = first.map((g) => g.quota?.dayUsed).sort((a, b) => (a ?? 0) - (b ?? 0));
    expect(numbers).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(first.every((g) => g.decision === "DECISION_ALLOW")).toBe(true);
    // Five units of the last lease are left: the next five calls take them without asking.
    for (let i = 0; i < 5; i++) await book.grant("k", m.authorize);
    expect(m.asked).toHaveLength(4);
  });

  it("gives back what a lease did not use when it ends, and the key's next lease is no larger than it used", async () => {
    const book = createLeaseBook({ maxUnits: 64, now });
    const m = meter();
    for (let i = 0; i < 4; i++) await book.grant("k", m.authorize); // leases of 1, 2, then 4 (1 used)
    expect(m.asked).toEqual([1, 2, 4]);
    expect(book.sweep()).toEqual([]);
    clock += 1_000;
    expect(book.sweep()).toEqual([
      { leaseId: "lease-3", accountId: "acct", units: 3, dayWindow: "2026-11-23", monthWindow: "2026-11" },
    ]);
    await book.grant("k", m.authorize);
    expect(m.asked.at(-1)).toBe(1);
  });

  it("serves a unit whose call got no answer again, under the same number", async () => {
    const book = createLeaseBook({ maxUnits: 64, now });
    const m = meter();
    await book.grant("k", m.authorize);
    const a = await book.grant("k", m.authorize); // lease of 2: units 2, 3
    expect(a.quota?.dayUsed).toBe(2);
    expect(book.giveBack("k", a)).toBe(true);
    const again = await book.grant("k", m.authorize);
    expect(again.quota?.dayUsed).toBe(2);
    expect((await book.grant("k", m.authorize)).quota?.dayUsed).toBe(3);
    // A unit of an ended lease is not taken back here (the caller refunds it to quota-meter).
    clock += 2_000;
    expect(book.giveBack("k", again)).toBe(false);
  });

  it("serves a key paying from credits from a credit lease: each call takes its own price, the balance counts what the lease holds, the rest goes back", async () => {
    const book = createLeaseBook({ maxUnits: 64, now });
    let balance = 100_000;
    const asked: Array<[number, number]> = [];
    // quota-meter drawing credit leases: `want` calls at the asking call's price.
    const authorize =
      (price: number) =>
      async (want: number): Promise<Authorization> => {
        asked.push([want, price]);
        await aTurnLater();
        balance -= want * price;
        return {
          decision: "DECISION_ALLOW",
          accountId: "acct",
          keyId: "key",
          metered: true,
          quota: { dayLimit: 10, dayUsed: 10, monthLimit: 0, monthUsed: 0 },
          credits: { drawn: want * price, remaining: balance, epoch: "gen-1" },
          lease: { id: `credit-${asked.length}`, units: want, ttlMs: 1_000 },
        } as Authorization;
      };
    const call = (price: number) => book.grant("k", authorize(price), price);
    // Concurrent calls share one ask; a lease of 1, then 2 (each used up): the pace doubles.
    const first = await Promise.all([call(1_000), call(1_000), call(1_000)]);
    expect(asked).toEqual([
      [1, 1_000],
      [2, 1_000],
    ]);
    expect(first.map((g) => g.credits?.drawn)).toEqual([1_000, 1_000, 1_000]);
    // Each answer's balance is what the account has once that call is paid.
    expect(first.map((g) => g.credits?.remaining).sort()).toEqual([97_000, 98_000, 99_000]);
    expect(first.every((g) => g.quota?.dayUsed === 10)).toBe(true);
    // Lease 3 of 4 calls at 1,000 (4,000): a call at 3,000, then one at 1,000 fit; 3,000 does not.
    const a = await call(1_000);
    expect(a.credits).toEqual({ drawn: 1_000, remaining: 96_000, epoch: "gen-1" });
    expect((await call(3_000)).credits?.remaining).toBe(93_000);
    // Lease 3 is spent (4,000 − 1,000 − 3,000): ended with nothing to return; lease 4 is 4 calls at 3,000.
    const failed = await call(3_000);
    expect(asked.at(-1)).toEqual([4, 3_000]);
    // That call got no answer from the node: its price goes back to the lease, all of which returns.
    expect(book.giveBack("k", failed)).toBe(true);
    clock += 2_000;
    expect(book.sweep()).toMatchObject([
      { leaseId: "credit-4", accountId: "acct", units: 0, creditsLeft: 12_000 },
    ]);
  });

  it("serves a batch of N calls only from a lease that holds all N units, else asks for at least N", async () => {
    const book = createLeaseBook({ maxUnits: 64, now });
    const m = meter();
    const batch = () => book.grant("b", m.authorize, 0, 8);
    await book.grant("b", m.authorize); // lease of 1, used
    await book.grant("b", m.authorize); // lease of 2: 1 left
    // 1 unit left of 8: that lease ends (its unit goes back), quota-meter is asked for at least 8.
    const first = await batch();
    expect(m.asked).toEqual([1, 2, 8]);
    expect(first).toMatchObject({ decision: "DECISION_ALLOW", units: 8, unit: 8 });
    expect(first.quota?.dayUsed).toBe(11);
    clock += 1_000;
    expect(book.sweep()).toMatchObject([{ leaseId: "lease-2", units: 1 }]);
    // A batch given back goes back whole: a lease of 16 then serves two batches of 8, then asks again.
    const big = createLeaseBook({ maxUnits: 64, now });
    const n = meter();
    const a = await big.grant("c", n.authorize, 0, 16);
    expect(a).toMatchObject({ units: 16, unit: 16 });
    expect(big.giveBack("c", a)).toBe(true);
    const again = await Promise.all([big.grant("c", n.authorize, 0, 8), big.grant("c", n.authorize, 0, 8)]);
    expect(n.asked).toEqual([16]);
    expect(again.map((g) => g.units)).toEqual([8, 8]);
    expect((await big.grant("c", n.authorize)).decision).toBe("DECISION_ALLOW");
    expect(n.asked).toHaveLength(2);
  });

  it("never serves a price of 0 from a credit lease", async () => {
    const book = createLeaseBook({ maxUnits: 64, now });
    const asked: number[] = [];
    const authorize = async (want: number): Promise<Authorization> => {
      asked.push(want);
      await aTurnLater();
      return {
        decision: asked.length === 1 ? "DECISION_ALLOW" : "DECISION_DAILY_LIMIT_EXCEEDED",
        accountId: "acct",
        keyId: "key",
        metered: asked.length === 1,
        quota: { dayLimit: 10, dayUsed: 10, monthLimit: 0, monthUsed: 0 },
        ...(asked.length === 1
          ? {
              credits: { drawn: 4_000, remaining: 0, epoch: "gen-1" },
              lease: { id: "credit-1", units: 4, ttlMs: 1_000 },
            }
          : {}),
      } as Authorization;
    };
    expect((await book.grant("z", authorize, 1_000)).credits?.drawn).toBe(1_000);
    // 3,000 left in the lease: a call priced 0 is not served from it (quota-meter refuses it), and
    // the lease ends with its credits going back.
    const free = await book.grant("z", authorize, 0);
    expect(free.decision).toBe("DECISION_DAILY_LIMIT_EXCEEDED");
    expect(asked).toHaveLength(2);
    expect(book.drain()).toMatchObject([{ leaseId: "credit-1", creditsLeft: 3_000 }]);
  });

  it("a refusal of a larger batch does not refuse the smaller calls that waited on it", async () => {
    const book = createLeaseBook({ maxUnits: 64, now });
    const asked: number[] = [];
    // quota-meter with 5 units left: it refuses more, grants up to that.
    let left = 5;
    const authorize = async (want: number): Promise<Authorization> => {
      asked.push(want);
      await aTurnLater();
      const ok = want <= left;
      if (ok) left -= want;
      return {
        decision: ok ? "DECISION_ALLOW" : "DECISION_RATE_LIMITED",
        accountId: "acct",
        keyId: "key",
        metered: ok,
        quota: null,
        ...(ok ? { lease: { id: `l-${asked.length}`, units: want, ttlMs: 1_000 } } : {}),
      } as Authorization;
    };
    const [batch, single] = await Promise.all([book.grant("w", authorize, 0, 8), book.grant("w", authorize)]);
    expect(batch.decision).toBe("DECISION_RATE_LIMITED");
    expect(single.decision).toBe("DECISION_ALLOW");
    expect(asked).toEqual([8, 1]);
  });

  it("shares a refusal, or an unmetered answer, with every call that waited on it", async () => {
    const book = createLeaseBook({ maxUnits: 64, now });
    const refused = meter({ decision: "DECISION_DAILY_LIMIT_EXCEEDED" });
    const answers = await Promise.all(Array.from({ length: 5 }, () => book.grant("r", refused.authorize)));
    expect(refused.asked).toHaveLength(1);
    expect(answers.every((a) => a.decision === "DECISION_DAILY_LIMIT_EXCEEDED")).toBe(true);
    const open = meter({ metered: false });
    const served = await Promise.all(Array.from({ length: 5 }, () => book.grant("o", open.authorize)));
    expect(open.asked).toHaveLength(1);
    expect(served.every((a) => a.decision === "DECISION_ALLOW" && !a.metered)).toBe(true);
  });

  it("never asks for more than its cap, and hands everything back at shutdown", async () => {
    const book = createLeaseBook({ maxUnits: 4, now });
    const m = meter();
    await Promise.all(Array.from({ length: 20 }, () => book.grant("k", m.authorize)));
    expect(Math.max(...m.asked)).toBe(4);
    const left = book.drain();
    expect(left.reduce((n, r) => n + r.units, 0)).toBe(m.asked.reduce((a, b) => a + b, 0) - 20);
  });
});

/** quota-meter for made-up keys: every key is unknown. */
const unknown = async (): Promise<Authorization> => {
  await aTurnLater();
  return { decision: "DECISION_INVALID_KEY", accountId: "", keyId: "", metered: false } as Authorization;
};

describe("lease book bound (issue 34, finding 6): any caller can send any bearer string", () => {
  it("holds no entry for a key quota-meter refused as unknown, however many are sent", async () => {
    const book = createLeaseBook({ maxUnits: 64, maxKeys: 1_000, now });
    for (let round = 0; round < 20; round++) {
      const keys = Array.from({ length: 500 }, () => crypto.randomUUID());
      const answers = await Promise.all(keys.map((k) => book.grant(k, unknown)));
      expect(answers.every((a) => a.decision === "DECISION_INVALID_KEY")).toBe(true);
      expect(book.keys).toBe(0);
    }
    // Concurrent calls of one unknown key still share one Authorize, and leave nothing behind.
    let asked = 0;
    const counting = () => {
      asked++;
      return unknown();
    };
    await Promise.all(Array.from({ length: 10 }, () => book.grant("same-junk", counting)));
    expect(asked).toBe(1);
    expect(book.holds("same-junk")).toBe(false);
  });

  it("stays within maxKeys under a flood of keys quota-meter knows, forgetting idle keys first and giving back the units of a lease it ends", async () => {
    const book = createLeaseBook({ maxUnits: 64, maxKeys: 100, now });
    const hot = meter();
    // A hot key with a lease of 8 (4 units left).
    for (let i = 0; i < 8; i++) await book.grant("hot", hot.authorize);
    expect(hot.asked).toEqual([1, 2, 4, 8]);
    // 10,000 distinct keys each served once: every one has a lease of 1, used up (idle).
    for (let i = 0; i < 10_000; i++) {
      await book.grant(`k${i}`, meter().authorize);
      expect(book.keys).toBeLessThanOrEqual(100);
    }
    // The idle keys went first: the hot key still holds its lease and takes its next unit from it.
    expect(book.holds("hot")).toBe(true);
    await book.grant("hot", hot.authorize);
    expect(hot.asked).toHaveLength(4);
    expect(book.sweep()).toEqual([]);
    // A full book of live leases: a new key ends the oldest lease, and its unused units go back.
    const leased = createLeaseBook({ maxUnits: 64, maxKeys: 3, now });
    const meters = ["a", "b", "c"].map((k) => ({ k, m: meter() }));
    for (const { k, m } of meters) for (let i = 0; i < 4; i++) await leased.grant(k, m.authorize); // lease of 4, 3 left
    await leased.grant("d", meter().authorize);
    expect(leased.keys).toBe(3);
    expect(leased.holds("a")).toBe(false);
    expect(leased.sweep()).toEqual([
      { leaseId: "lease-3", accountId: "acct", units: 3, dayWindow: "2026-11-23", monthWindow: "2026-11" },
    ]);
  });
});

describe("unknown keys per client address (issue 34, finding 6)", () => {
  it("lets a client `burst` unknown keys, then one per 1/perSecond s; keys that turn out known cost nothing", () => {
    let t = 0;
    const limiter = createUnknownKeyLimiter({ perSecond: 2, burst: 5, now: () => t });
    const allowed = () =>
      Array.from({ length: 20 }, () => limiter.take("203.0.113.9")).filter(Boolean).length;
    expect(allowed()).toBe(5);
    expect(limiter.take("203.0.113.10")).toBe(true); // another client has its own bucket
    t += 1_000;
    expect(allowed()).toBe(2);
    // A genuine key's token comes back: a client sending only known keys is never limited.
    t += 10_000;
    for (let i = 0; i < 100; i++) {
      expect(limiter.take("198.51.100.1")).toBe(true);
      limiter.giveBack("198.51.100.1");
    }
  });

  it("remembers at most maxClients, and none whose bucket is full again", () => {
    const limiter = createUnknownKeyLimiter({ perSecond: 1, burst: 2, maxClients: 50, now });
    for (let i = 0; i < 10_000; i++) limiter.take(`client-${i}`);
    expect(limiter.clients).toBe(50);
    const fresh = createUnknownKeyLimiter({ perSecond: 1, burst: 2, now });
    fresh.take("a");
    fresh.giveBack("a");
    expect(fresh.clients).toBe(0);
  });
});
