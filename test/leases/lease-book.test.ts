// The gateway's lease book driven with plain objects (a quota-meter answer made in the test):
// one Authorize per key in flight, leases that grow with a key's pace, units numbered once,
// unused units handed back when a lease ends, and a unit without an answer served again.
import { describe, expect, it } from "vitest";
import type { Authorization } from "../../services/gateway/src/clients/quota-meter.ts";
import { createLeaseBook } from "../../services/gateway/src/leases.ts";

let clock = 1_000;
const now = () => clock;

/** quota-meter as the test scripts it: grants what is asked, counting from `used`. */
function meter(opts: { cap?: number; decision?: Authorization["decision"]; metered?: boolean } = {}) {
  let used = 0;
  const asked: number[] = [];
  const authorize = async (want: number): Promise<Authorization> => {
    asked.push(want);
    await new Promise((r) => setImmediate(r));
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
