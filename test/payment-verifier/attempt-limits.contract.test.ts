// The attempt limits and the payer penalty, counted and checked by the reservation store's reserve
// (one Lua script in Redis, or its in-memory stand-in): one contract suite run against both stores
// (stores.contract.support.ts). Also the in-process refusal memory beside them.
import { beforeAll, describe, expect, it } from "vitest";
import { RefusalMemory } from "../../services/payment-verifier/src/stores/attempt-limits.ts";
import {
  penaltyPayer,
  type ReservationStore,
} from "../../services/payment-verifier/src/stores/reservations.ts";
import { eventually } from "../support/eventually.ts";
import { useContractStores } from "./stores.contract.support.ts";
import { paymentFacts as facts, uniqueId } from "./support.ts";

const { stores } = useContractStores();

type Check = { scope: string; id: string; limit: { perSecond: number; burst: number } };

/**
 * A fresh payment of `payer` (the suite's by default): its key as Verify makes it (on a Redis Cluster
 * under the payer's hash tag: the payer's bucket shares its slot) and facts naming the payer.
 */
const paymentIn =
  (store: ReservationStore) =>
  (payer: string = facts().payer) => ({
    key: store.keyOf(payer, uniqueId("k-")),
    facts: facts({ payer }),
  });
// The attempt limits are counted by the reserve, in the same round trip (one Lua script in Redis).
describe.each(stores)("attempt limit contract (counted by reserve): %s", (_name, make) => {
  let store: ReservationStore;
  let paymentOf: ReturnType<typeof paymentIn>;
  beforeAll(() => {
    store = make();
    paymentOf = paymentIn(store);
  });
  const limit = { perSecond: 10, burst: 5 };
  /** One attempt, reserving a fresh payment: the scope of the limit that refused it, if any. */
  const take = async (checks: Check[], nowMs: number) => {
    const p = paymentOf(checks.find((c) => c.scope === "payer")?.id);
    const r = await store.reserve(p.key, uniqueId("t-"), p.facts, 60_000, { checks, nowMs });
    if (!r.ok && !r.limited) throw new Error("a fresh payment was refused without a limit");
    return r.ok ? undefined : r.limited;
  };

  it("allows a burst, then refuses, then allows again at the sustained rate", async () => {
    const client = uniqueId("ip-");
    const now = 1_000_000;
    const at = (ms: number) => take([{ scope: "client", id: client, limit }], ms);
    for (let i = 0; i < 5; i++) expect(await at(now)).toBeUndefined();
    expect(await at(now)).toBe("client");
    expect(await at(now + 50)).toBe("client");
    // One attempt's worth (100 ms at 10/s) later, one more is allowed, and only one.
    expect(await at(now + 100)).toBeUndefined();
    expect(await at(now + 100)).toBe("client");
  });

  it("counts the client and the payer apart, names the limit that tripped, and skips empty ids", async () => {
    const payer = uniqueId("payer-");
    const now = 2_000_000;
    for (let i = 0; i < 5; i++) {
      const checks = [
        { scope: "client", id: uniqueId("ip-"), limit },
        { scope: "payer", id: payer, limit },
      ];
      expect(await take(checks, now)).toBeUndefined();
    }
    expect(
      await take(
        [
          { scope: "client", id: uniqueId("ip-"), limit },
          { scope: "payer", id: payer, limit },
        ],
        now,
      ),
    ).toBe("payer");
    // An unknown client (no address) is not limited by address; a zero limit is off.
    for (let i = 0; i < 20; i++) {
      expect(await take([{ scope: "client", id: "", limit }], now)).toBeUndefined();
      expect(
        await take([{ scope: "client", id: "1.2.3.4", limit: { perSecond: 0, burst: 0 } }], now),
      ).toBeUndefined();
    }
  });

  it("treats payer addresses in any casing as one payer", async () => {
    const payer = "0xAbCdEf0000000000000000000000000000000000".replace("0000", uniqueId("").slice(0, 4));
    const now = 3_000_000;
    for (let i = 0; i < 5; i++) {
      const id = i % 2 ? payer.toLowerCase() : payer.toUpperCase();
      expect(await take([{ scope: "payer", id, limit }], now)).toBeUndefined();
    }
    expect(await take([{ scope: "payer", id: payer, limit }], now)).toBe("payer");
  });

  it("reserves nothing for a refused attempt, and counts an attempt on a payment already held", async () => {
    const client = uniqueId("ip-");
    const now = 4_000_000;
    const checks = [{ scope: "client", id: client, limit }];
    const held = paymentOf().key;
    expect((await store.reserve(held, "holder", facts(), 60_000, { checks, nowMs: now })).ok).toBe(true);
    // Replays of the held payment are refused as held, and each one counts against the client.
    for (let i = 0; i < 4; i++) {
      const replay = await store.reserve(held, uniqueId("t-"), facts(), 60_000, { checks, nowMs: now });
      expect(replay).toMatchObject({ ok: false, current: { token: "holder" } });
      expect(replay.ok || replay.limited).toBeFalsy();
    }
    const key = paymentOf().key;
    expect(await store.reserve(key, "late", facts(), 60_000, { checks, nowMs: now })).toEqual({
      ok: false,
      current: undefined,
      limited: "client",
    });
    expect(await store.get(key)).toBeUndefined();
    // The refused attempt advanced nothing: one interval later exactly one more is taken.
    expect((await store.reserve(key, "later", facts(), 60_000, { checks, nowMs: now + 100 })).ok).toBe(true);
    expect((await store.get(key))?.token).toBe("later");
  });

  it("counts attempts that reserve nothing (refused before a reservation) in the same buckets", async () => {
    const client = uniqueId("ip-");
    const now = 5_000_000;
    const checks = [{ scope: "client", id: client, limit }];
    for (let i = 0; i < 3; i++) expect(await store.countAttempt({ checks, nowMs: now })).toBeUndefined();
    expect(await take(checks, now)).toBeUndefined();
    expect(await store.countAttempt({ checks, nowMs: now })).toBeUndefined();
    expect(await store.countAttempt({ checks, nowMs: now })).toBe("client");
    expect(await take(checks, now)).toBe("client");
    expect(
      await store.countAttempt({ checks: [{ scope: "client", id: "", limit }], nowMs: now }),
    ).toBeUndefined();
  });
});

// A payer penalized by its scheme is refused by the reserve, in the same round trip, before anything is counted.
describe.each(stores)("payer penalty contract (checked by reserve): %s", (_name, make) => {
  let store: ReservationStore;
  let paymentOf: ReturnType<typeof paymentIn>;
  beforeAll(() => {
    store = make();
    paymentOf = paymentIn(store);
  });

  it("refuses the penalized name until it lapses, counting and reserving nothing; another name passes", async () => {
    const name = uniqueId("exact:0xPayer");
    const limit = { perSecond: 10, burst: 1 };
    const attempt = (penalty: string) => ({
      checks: [{ scope: "payer", id: penaltyPayer(name), limit }],
      nowMs: Date.now(),
      penalty,
    });
    await store.penalize(name, 300);
    // Verify's payments name the penalized payer (payerPenalty): its slot on a Redis Cluster.
    const { key, facts: f } = paymentOf(penaltyPayer(name));
    const refused = await store.reserve(key, "t1", f, 60_000, attempt(name.toUpperCase()));
    expect(refused).toMatchObject({ ok: false, current: undefined });
    const left = refused.ok ? 0 : (refused.penalizedMs ?? 0);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(300);
    expect(await store.get(key)).toBeUndefined();
    // Another name is not refused, and the burst of one was not spent by the refusal above.
    // (The same payer in another scheme: another name.)
    expect(
      (await store.reserve(paymentOf(f.payer).key, "t2", f, 60_000, attempt(`upto:${f.payer}`))).ok,
    ).toBe(true);
    // Once the penalty lapses, the payer's payment is taken (a refusal spends nothing meanwhile).
    const lapsed = await eventually(
      () => store.reserve(key, "t3", f, 60_000, attempt(name)),
      (r) => r.ok,
      10_000,
      20,
    );
    expect(lapsed.ok).toBe(true);
  });
});

describe("refusal memory", () => {
  it("recalls a refusal until it expires, and stays within its bound", () => {
    const memory = new RefusalMemory({ max: 3, ttlMs: 1_000 });
    memory.remember("a", "bad signature", 0);
    expect(memory.recall("a", 999)).toBe("bad signature");
    expect(memory.recall("a", 1_000)).toBeUndefined();
    for (const k of ["b", "c", "d", "e"]) memory.remember(k, k, 0);
    expect(memory.size).toBe(3);
    expect(memory.recall("b", 1)).toBeUndefined(); // the oldest went first
    expect(memory.recall("e", 1)).toBe("e");
  });
});
