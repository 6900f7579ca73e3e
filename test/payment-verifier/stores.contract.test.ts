// One contract suite for the payment stores that are written twice — a Redis Lua script and its
// in-memory stand-in: the reservation state machine, the attempt limits and the state mppx keeps
// for MPP (replay claims, session channels) must behave the same,
// or the embedded default would not show what production does.
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type MppxState,
  memoryMppxState,
  type Retention,
  redisMppxState,
} from "../../libs/payment-rails/src/mppx-store.ts";
import { RefusalMemory } from "../../services/payment-verifier/src/stores/attempt-limits.ts";
import type { ReservationStore } from "../../services/payment-verifier/src/stores/reservations.ts";
import { MemoryReservationStore } from "../../services/payment-verifier/src/stores/reservations-memory.ts";
import { RedisReservationStore } from "../../services/payment-verifier/src/stores/reservations-redis.ts";
import { testRedis } from "../support/redis.ts";
import { paymentFacts as facts, uniqueId } from "./support.ts";

const prefix = `${uniqueId("test:pvstores:")}:`;
const redis = testRedis(prefix);

const stores: [string, () => ReservationStore][] = [
  ["Redis (Lua)", () => new RedisReservationStore(redis, prefix)],
  ["in-memory stand-in", () => new MemoryReservationStore()],
];

describe.each(stores)("reservation store contract: %s", (_name, make) => {
  let store: ReservationStore;
  beforeAll(() => {
    store = make();
  });

  it("lets one of many concurrent reserves of a payment take it", async () => {
    const key = uniqueId("k-");
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.reserve(key, `t${i}`, facts(), 60_000)),
    );
    const won = results.filter((r) => r.ok);
    expect(won).toHaveLength(1);
    const current = await store.get(key);
    expect(current?.state).toBe("reserved");
    expect(current?.token).toBe(won[0]?.ok ? won[0].token : "");
  });

  it("gives a retried Verify of the same request its token, and nothing to another request or another call", async () => {
    const key = uniqueId("k-");
    const f = facts();
    expect(await store.reserve(key, "first", f, 60_000)).toEqual({
      ok: true,
      token: "first",
      retried: false,
    });
    expect(await store.reserve(key, "second", f, 60_000)).toEqual({
      ok: true,
      token: "first",
      retried: true,
    });
    // Same request id, but a pricier endpoint, another amount or other credentials: not a retry.
    for (const other of [
      { ...f, credential: "fp-of-other-credentials" },
      { ...f, endpoint: "/api/chain/erc721-tokens" },
      { ...f, amount: "8000" },
      { ...f, network: "sepolia" },
      { ...f, payer: "0x0000000000000000000000000000000000000002" },
      { ...f, requestId: uniqueId("req-") },
      { ...f, requestId: "" },
    ]) {
      expect((await store.reserve(key, "third", other, 60_000)).ok).toBe(false);
    }
  });

  it("settles only for the token and request that hold the payment, and remembers the receipt", async () => {
    const key = uniqueId("k-");
    const f = facts();
    await store.reserve(key, "tok", f, 60_000);
    await store.heartbeat("replica-a", 60_000);
    expect((await store.beginSettle(key, "other", f.requestId, 60_000, "replica-a")).ok).toBe(false);
    expect((await store.beginSettle(key, "tok", uniqueId("req-"), 60_000, "replica-a")).ok).toBe(false);
    const begun = await store.beginSettle(key, "tok", f.requestId, 60_000, "replica-a");
    expect(begun).toMatchObject({
      ok: true,
      takenOver: false,
      reservation: { state: "settling", token: "tok", owner: "replica-a", ...f },
    });
    expect((await store.beginSettle(key, "other", f.requestId, 60_000, "replica-b")).ok).toBe(false);
    expect((await store.beginSettle(key, "tok", uniqueId("req-"), 60_000, "replica-b")).ok).toBe(false);
    await store.markSettled(key, "tok", "0xtx", '[{"name":"PAYMENT-RESPONSE","value":"r"}]', 60_000);
    expect(await store.get(key)).toMatchObject({ state: "settled", transaction: "0xtx", token: "tok" });
    expect(await store.beginSettle(key, "tok", f.requestId, 60_000, "replica-a")).toMatchObject({
      ok: false,
      busy: false,
      current: { state: "settled", receipt: '[{"name":"PAYMENT-RESPONSE","value":"r"}]' },
    });
    // Used: nobody reserves it again.
    expect((await store.reserve(key, "again", facts(), 60_000)).ok).toBe(false);
  });

  it("runs one Settle of a call at a time: the same call again is busy while its owner lives, taken over once it died", async () => {
    const key = uniqueId("k-");
    const f = facts();
    const [a, b, c] = [uniqueId("replica-a-"), uniqueId("replica-b-"), uniqueId("replica-c-")];
    await store.reserve(key, "tok", f, 60_000);
    await store.heartbeat(a, 300);
    await store.heartbeat(b, 60_000);
    expect((await store.beginSettle(key, "tok", f.requestId, 60_000, a)).ok).toBe(true);
    // The same call's Settle again (the gateway's retry after a lost answer), on the owner itself
    // or on another replica: busy while the owner is alive; the owner stays.
    for (const who of [a, b]) {
      expect(await store.beginSettle(key, "tok", f.requestId, 60_000, who)).toMatchObject({
        ok: false,
        busy: true,
        current: { state: "settling", owner: a },
      });
    }
    // Another call never joins or takes it, owner alive or not.
    expect(await store.beginSettle(key, "tok", uniqueId("req-"), 60_000, b)).toMatchObject({
      ok: false,
      busy: false,
    });
    await new Promise((r) => setTimeout(r, 400)); // a's liveness lapsed: it died mid-settlement
    const [first, second] = await Promise.all([
      store.beginSettle(key, "tok", f.requestId, 60_000, b),
      store.beginSettle(key, "tok", f.requestId, 60_000, c),
    ]);
    // Exactly one takes it over (compare-and-set of the owner); the other finds it busy under b.
    expect(first).toMatchObject({ ok: true, takenOver: true, reservation: { state: "settling", owner: b } });
    expect(second).toMatchObject({ ok: false, busy: true, current: { owner: b } });
    expect((await store.get(key))?.owner).toBe(b);
    // An owner never marked alive is dead too.
    await store.drop(key, "tok");
    await store.reserve(key, "tok2", f, 60_000);
    expect((await store.beginSettle(key, "tok2", f.requestId, 60_000, uniqueId("never-"))).ok).toBe(true);
    expect(await store.beginSettle(key, "tok2", f.requestId, 60_000, b)).toMatchObject({
      ok: true,
      takenOver: true,
    });
  });

  it("takes over a settling record of the caller's own at once when the caller runs nothing of that call (an orphan); busy otherwise", async () => {
    const key = uniqueId("k-");
    const f = facts();
    const [a, b] = [uniqueId("replica-a-"), uniqueId("replica-b-")];
    await store.reserve(key, "tok", f, 60_000);
    await store.heartbeat(a, 60_000);
    await store.heartbeat(b, 60_000);
    expect((await store.beginSettle(key, "tok", f.requestId, 60_000, a)).ok).toBe(true);
    // Its owner, with a Settle of the call still running there: busy.
    expect(await store.beginSettle(key, "tok", f.requestId, 60_000, a, false)).toMatchObject({
      ok: false,
      busy: true,
    });
    // Another live replica saying it runs nothing of the call changes nothing: not its record.
    expect(await store.beginSettle(key, "tok", f.requestId, 60_000, b, true)).toMatchObject({
      ok: false,
      busy: true,
      current: { owner: a },
    });
    // Its owner, running nothing of the call: an orphan, taken over.
    expect(await store.beginSettle(key, "tok", f.requestId, 60_000, a, true)).toMatchObject({
      ok: true,
      takenOver: true,
      reservation: { state: "settling", owner: a },
    });
  });

  it("abandons a settling payment only for its owner's fresh begin (its attempt id), never a takeover; drops one only under its own begin", async () => {
    const f = facts();
    const [a, b] = [uniqueId("replica-a-"), uniqueId("replica-b-")];
    await store.heartbeat(b, 60_000);
    // A fresh begin whose answer was lost ran nothing: abandoned for that owner and attempt only.
    const lost = uniqueId("k-");
    await store.reserve(lost, "tok", f, 60_000);
    expect(await store.abandon(lost, "tok", a, "a:1")).toBeUndefined(); // still reserved
    expect((await store.beginSettle(lost, "tok", f.requestId, 60_000, a, false, "a:1")).ok).toBe(true);
    expect(await store.get(lost)).toMatchObject({ state: "settling", owner: a, attempt: "a:1" });
    expect(await store.abandon(lost, "tok", a, "a:0")).toBeUndefined();
    expect(await store.abandon(lost, "other", a, "a:1")).toBeUndefined();
    expect(await store.abandon(lost, "tok", b, "a:1")).toBeUndefined();
    expect(await store.abandon(lost, "tok", a, "a:1")).toMatchObject({
      state: "settling",
      token: "tok",
      ...f,
    });
    expect(await store.get(lost)).toBeUndefined();
    expect((await store.reserve(lost, "tok2", facts(), 60_000)).ok).toBe(true);
    // A takeover (here of its own orphan) may run what was sent before: marked, never abandoned.
    const taken = uniqueId("k-");
    await store.reserve(taken, "tok", f, 60_000);
    expect((await store.beginSettle(taken, "tok", f.requestId, 60_000, a, false, "a:2")).ok).toBe(true);
    expect(await store.beginSettle(taken, "tok", f.requestId, 60_000, a, true, "a:3")).toMatchObject({
      ok: true,
      takenOver: true,
      reservation: { attempt: "a:3+takeover" },
    });
    for (const attempt of ["a:2", "a:3", "a:3+takeover"]) {
      expect(await store.abandon(taken, "tok", a, attempt)).toBeUndefined();
    }
    // A drop after a settlement that moved nothing deletes only under the begin that ran it, and
    // says whether it did (a begin taken over since must not undo what the takeover may serve).
    expect(await store.drop(taken, "tok", { owner: a, attempt: "a:2" })).toBe(false);
    expect(await store.drop(taken, "tok", { owner: b, attempt: "a:3+takeover" })).toBe(false);
    expect((await store.get(taken))?.state).toBe("settling");
    expect(await store.drop(taken, "tok", { owner: a, attempt: "a:3+takeover" })).toBe(true);
    expect(await store.get(taken)).toBeUndefined();
    expect(await store.drop(taken, "tok", { owner: a, attempt: "a:3+takeover" })).toBe(false);
  });

  it("releases only for the holder, and a released payment can be reserved again", async () => {
    const key = uniqueId("k-");
    const f = facts();
    await store.reserve(key, "tok", f, 60_000);
    expect(await store.release(key, "wrong", f.requestId)).toBeUndefined();
    expect(await store.release(key, "tok", uniqueId("req-"))).toBeUndefined();
    expect(await store.release(key, "tok", f.requestId)).toMatchObject({ token: "tok", scheme: "exact" });
    expect((await store.reserve(key, "next", facts(), 60_000)).ok).toBe(true);
  });

  it("answers a release run again under its own release id what it freed; any other release gets nothing", async () => {
    const key = uniqueId("k-");
    const f = facts();
    const a = { id: uniqueId("replica-a:"), keepMs: 60_000 };
    await store.reserve(key, "tok", f, 60_000);
    const first = await store.release(key, "tok", f.requestId, a);
    expect(first).toMatchObject({ token: "tok", scheme: "exact", requestId: f.requestId });
    // The same release again (its answer was lost): what it freed, so its scheme's undo still runs.
    expect(await store.release(key, "tok", f.requestId, a)).toEqual(first);
    // Any other release of it (a second Release of the call, one without an id) frees nothing.
    expect(
      await store.release(key, "tok", f.requestId, { id: uniqueId("replica-b:"), keepMs: 60_000 }),
    ).toBeUndefined();
    expect(await store.release(key, "tok", f.requestId)).toBeUndefined();
    // The payment reserved again and released by another release: the first's answer is still its own.
    const again = facts();
    expect((await store.reserve(key, "next", again, 60_000)).ok).toBe(true);
    expect(await store.release(key, "tok", f.requestId, a)).toEqual(first);
    expect(await store.get(key)).toMatchObject({ state: "reserved", token: "next" });
    const b = { id: uniqueId("replica-b:"), keepMs: 60_000 };
    expect(await store.release(key, "next", again.requestId, b)).toMatchObject({ token: "next" });
    expect(await store.release(key, "tok", f.requestId, a)).toEqual(first);
  });

  it("forgets a release's answer after the time it was asked to keep it", async () => {
    const key = uniqueId("k-");
    const f = facts();
    const mark = { id: uniqueId("replica-a:"), keepMs: 50 };
    await store.reserve(key, "tok", f, 60_000);
    expect(await store.release(key, "tok", f.requestId, mark)).toMatchObject({ token: "tok" });
    await new Promise((r) => setTimeout(r, 120));
    expect(await store.release(key, "tok", f.requestId, mark)).toBeUndefined();
  });

  it("drops a settling payment whose settlement moved nothing, for its holder only", async () => {
    const key = uniqueId("k-");
    const f = facts();
    await store.reserve(key, "tok", f, 60_000);
    await store.beginSettle(key, "tok", f.requestId, 60_000, "replica-a");
    expect(await store.drop(key, "someone-else")).toBe(false);
    expect((await store.get(key))?.state).toBe("settling");
    expect(await store.drop(key, "tok")).toBe(true);
    expect(await store.get(key)).toBeUndefined();
  });

  it("records the verdict (money that already moved, the scheme's hold) on the holder's reservation only", async () => {
    const key = uniqueId("k-");
    const f = facts();
    await store.reserve(key, "tok", f, 60_000);
    await store.markVerified(key, "wrong", { collected: "0xbad", hold: "theirs" });
    expect(await store.get(key)).toMatchObject({ collected: "", hold: "" });
    await store.markVerified(key, "tok", { collected: "0xlanded", hold: "pending-1" });
    expect(await store.get(key)).toMatchObject({
      collected: "0xlanded",
      hold: "pending-1",
      state: "reserved",
    });
    // The hold travels to Settle and Release.
    const begun = await store.beginSettle(key, "tok", f.requestId, 60_000, "replica-a");
    expect(begun.ok && begun.reservation.hold).toBe("pending-1");
  });

  it("sums a payer's draws in flight at each reserve, until each is settled, dropped, released or found collected", async () => {
    const account = uniqueId("eip155:1|0xtoken|0xPayer");
    const draw = (amount: string) => ({ account, amount, ttlMs: 60_000 });
    const [a, b, c, d, e] = ["a", "b", "c", "d", "e"].map((x) => uniqueId(`k-${x}-`)) as string[] as [
      string,
      string,
      string,
      string,
      string,
    ];
    const f = facts();
    const drawn = async (key: string, amount: string, token = "tok", ff = facts()) => {
      const r = await store.reserve(key, token, ff, 60_000, undefined, draw(amount));
      return r.ok ? r.drawn : undefined;
    };
    expect(await drawn(a, "1000", "tok", f)).toBe(1000n);
    expect(await drawn(b, "2000")).toBe(3000n);
    // A retried Verify of the same request is not counted twice; another payer's draws are apart.
    expect(await drawn(a, "1000", "again", f)).toBe(3000n);
    const other = await store.reserve(uniqueId("k-"), "tok", facts(), 60_000, undefined, {
      account: uniqueId("eip155:1|0xtoken|0xother"),
      amount: "7",
      ttlMs: 60_000,
    });
    expect(other.ok && other.drawn).toBe(7n);
    // The account in another casing is the same account; a refused reserve adds nothing.
    const upper = await store.reserve(c, "tok", facts(), 60_000, undefined, {
      ...draw("4000"),
      account: account.toUpperCase(),
    });
    expect(upper.ok && upper.drawn).toBe(7000n);
    expect((await store.reserve(c, "tok2", facts(), 60_000, undefined, draw("4000"))).ok).toBe(false);
    // Released, settled (sent and mined), found collected, or dropped (moved nothing): no longer drawing.
    await store.release(a, "tok", f.requestId);
    expect(await drawn(d, "1")).toBe(6001n);
    await store.heartbeat("replica-a", 60_000);
    const cur = await store.get(b);
    await store.beginSettle(b, "tok", cur?.requestId ?? "", 60_000, "replica-a");
    expect(await drawn(e, "1", "tok")).toBe(6002n); // settling still draws
    await store.markSettled(b, "tok", "0xtx", "[]", 60_000);
    await store.markVerified(c, "tok", { collected: "0xlanded", hold: "" });
    const ce = await store.get(e);
    await store.beginSettle(e, "tok", ce?.requestId ?? "", 60_000, "replica-a");
    await store.drop(e, "tok");
    expect(await drawn(uniqueId("k-"), "10")).toBe(11n); // d and the new one
  });

  it("keeps counting the draw of a payment dropped with its transfer broadcast, until the same payment takes its place", async () => {
    const account = uniqueId("acct-");
    const draw = (amount: string) => ({ account, amount, ttlMs: 60_000 });
    const key = uniqueId("k-");
    const f = facts();
    await store.reserve(key, "tok", f, 60_000, undefined, draw("5"));
    await store.heartbeat("replica-a", 60_000);
    await store.beginSettle(key, "tok", f.requestId, 60_000, "replica-a");
    expect(await store.drop(key, "tok", undefined, true)).toBe(true);
    // Its transfer may still land: the payer's next payment still sees it drawn.
    const next = await store.reserve(uniqueId("k-"), "tok", facts(), 60_000, undefined, draw("3"));
    expect(next.ok && next.drawn).toBe(8n);
    // The client retries the same payment: one draw for it, not two.
    const again = await store.reserve(key, "tok2", facts(), 60_000, undefined, draw("5"));
    expect(again.ok && again.drawn).toBe(8n);
  });

  it("stops counting a draw after its TTL (a holder that died)", async () => {
    const account = uniqueId("acct-");
    await store.reserve(uniqueId("k-"), "tok", facts(), 60_000, undefined, {
      account,
      amount: "5",
      ttlMs: 50,
    });
    await new Promise((r) => setTimeout(r, 120));
    const next = await store.reserve(uniqueId("k-"), "tok", facts(), 60_000, undefined, {
      account,
      amount: "3",
      ttlMs: 60_000,
    });
    expect(next.ok && next.drawn).toBe(3n);
  });

  it("forgets a reservation after its time to live", async () => {
    const key = uniqueId("k-");
    await store.reserve(key, "tok", facts(), 50);
    await new Promise((r) => setTimeout(r, 120));
    expect(await store.get(key)).toBeUndefined();
    expect((await store.reserve(key, "tok2", facts(), 60_000)).ok).toBe(true);
  });
});

type Check = { scope: string; id: string; limit: { perSecond: number; burst: number } };

// The attempt limits are counted by the reserve, in the same round trip (one Lua script in Redis).
describe.each(stores)("attempt limit contract (counted by reserve): %s", (_name, make) => {
  let store: ReservationStore;
  beforeAll(() => {
    store = make();
  });
  const limit = { perSecond: 10, burst: 5 };
  /** One attempt, reserving a fresh payment: the scope of the limit that refused it, if any. */
  const take = async (checks: Check[], nowMs: number) => {
    const r = await store.reserve(uniqueId("k-"), uniqueId("t-"), facts(), 60_000, { checks, nowMs });
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
    const held = uniqueId("k-");
    expect((await store.reserve(held, "holder", facts(), 60_000, { checks, nowMs: now })).ok).toBe(true);
    // Replays of the held payment are refused as held, and each one counts against the client.
    for (let i = 0; i < 4; i++) {
      const replay = await store.reserve(held, uniqueId("t-"), facts(), 60_000, { checks, nowMs: now });
      expect(replay).toMatchObject({ ok: false, current: { token: "holder" } });
      expect(replay.ok || replay.limited).toBeFalsy();
    }
    const key = uniqueId("k-");
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
  beforeAll(() => {
    store = make();
  });

  it("refuses the penalized name until it lapses, counting and reserving nothing; another name passes", async () => {
    const name = uniqueId("exact:0xPayer");
    const limit = { perSecond: 10, burst: 1 };
    const attempt = (penalty: string) => ({
      checks: [{ scope: "payer", id: name, limit }],
      nowMs: Date.now(),
      penalty,
    });
    await store.penalize(name, 300);
    const key = uniqueId("k-");
    const refused = await store.reserve(key, "t1", facts(), 60_000, attempt(name.toUpperCase()));
    expect(refused).toMatchObject({ ok: false, current: undefined });
    const left = refused.ok ? 0 : (refused.penalizedMs ?? 0);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(300);
    expect(await store.get(key)).toBeUndefined();
    // Another name is not refused, and the burst of one was not spent by the refusal above.
    expect((await store.reserve(uniqueId("k-"), "t2", facts(), 60_000, attempt(uniqueId("exact:")))).ok).toBe(
      true,
    );
    await new Promise((r) => setTimeout(r, 320));
    expect((await store.reserve(key, "t3", facts(), 60_000, attempt(name))).ok).toBe(true);
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

const mppxStates: [string, (retention?: Retention) => MppxState][] = [
  [
    "Redis (Lua compare-and-set, SET NX PXAT)",
    (retention) => redisMppxState(redis, `${prefix}mpp:`, retention),
  ],
  ["in-memory stand-in", (retention) => memoryMppxState(retention)],
];

describe.each(mppxStates)(
  "mppx state contract (MPP replay claims and session channels): %s",
  (_name, make) => {
    const channelId = () => `0x${randomBytes(32).toString("hex")}`;

    it("reads back what mppx writes, bigints included (mppx's own JSON)", async () => {
      const state = make();
      const id = channelId();
      const value = { channelId: id, spent: 123n, deposit: 10n ** 20n, finalized: false, units: 3 };
      await state.channels.put(id, value);
      expect(await state.channels.get(id)).toEqual(value);
      expect(await state.channels.get(channelId())).toBeNull();
      await state.channels.delete(id);
      expect(await state.channels.get(id)).toBeNull();
    });

    it("lets one of many concurrent claims of a replay key win, until the key's expiry", async () => {
      const state = make();
      const key = `mppx:charge:${channelId()}`;
      const expires = Date.now() + 1_200;
      const claims = await Promise.all(
        Array.from({ length: 20 }, () => state.charges.tryClaim?.(key, expires)),
      );
      expect(claims.filter((c) => c === true)).toHaveLength(1);
      expect(await state.charges.tryClaim?.(key, Date.now() + 60_000)).toBe(false);
      await new Promise((r) => setTimeout(r, 1_300));
      expect(await state.charges.tryClaim?.(key, Date.now() + 60_000)).toBe(true);
    });

    it("applies concurrent updates of one channel one at a time (deductions from two replicas)", async () => {
      const replicas = [make(), make()];
      // The memory stand-in is one process: its replicas are the same store.
      const stores = replicas[0]?.kind === "memory" ? [replicas[0], replicas[0]] : replicas;
      const id = channelId();
      await stores[0]?.channels.put(id, { spent: 0n, highest: 25n });
      const deduct = (state: MppxState) =>
        state.channels.update(id, (current) => {
          const c = current as { spent: bigint; highest: bigint };
          if (c.highest - c.spent < 1n) return { op: "noop" as const, result: "refused" };
          return { op: "set" as const, value: { ...c, spent: c.spent + 1n }, result: String(c.spent + 1n) };
        });
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) => deduct(stores[i % 2] as MppxState)),
      );
      const taken = results.filter((r) => r !== "refused");
      expect(taken).toHaveLength(25);
      expect(new Set(taken).size).toBe(25);
      expect(results.filter((r) => r === "refused")).toHaveLength(5);
      expect(await stores[1]?.channels.get(id)).toEqual({ spent: 25n, highest: 25n });
      // delete and noop do what they say.
      expect(await stores[0]?.channels.update(id, () => ({ op: "delete" as const, result: "gone" }))).toBe(
        "gone",
      );
      expect(await stores[1]?.channels.get(id)).toBeNull();
    });

    it("keeps with each session channel the vouchers nearest what it spent (the highest within, the lowest above), for the settlement worker", async () => {
      const state = make();
      const voucher = (amount: bigint) => ({ cumulativeAmount: amount, signature: `0x${amount}` });
      const channel = async () => {
        const id = channelId();
        const kept = async () => {
          const c = (await state.channels.get(id)) as {
            settleableVoucher?: unknown;
            ceilingVoucher?: unknown;
          };
          return [c.settleableVoucher, c.ceilingVoucher];
        };
        const write = (fields: object) =>
          state.channels.update(id, (current) => ({
            op: "set" as const,
            value: { ...(current as object), ...fields },
            result: null,
          }));
        // As mppx serves a call: the voucher accepted (the highest raised), then the price charged.
        const accept = (highest: bigint) =>
          write({ highestVoucher: voucher(highest), highestVoucherAmount: highest });
        const charge = (spent: bigint) => write({ spent });
        await state.channels.put(id, {
          channelId: id,
          highestVoucher: null,
          highestVoucherAmount: 0n,
          spent: 0n,
        });
        return { kept, write, accept, charge };
      };
      const c = await channel();
      expect(await c.kept()).toEqual([undefined, undefined]);
      await c.accept(1_000n);
      await c.charge(1_000n);
      expect(await c.kept()).toEqual([voucher(1_000n), null]);
      // A voucher one price ahead (its payer skipped a price, or its call's charge never landed
      // and the payer moved past it): the highest stays a price above what is spent.
      await c.accept(3_000n);
      await c.charge(2_000n);
      expect(await c.kept()).toEqual([voucher(1_000n), voucher(3_000n)]);
      await c.accept(4_000n);
      await c.charge(3_000n);
      // The voucher of 3,000, kept above, is now exactly what was spent.
      expect(await c.kept()).toEqual([voucher(3_000n), voucher(4_000n)]);
      // Two prices ahead: the lowest voucher above what was spent is kept for a leaving payer.
      await c.accept(6_000n);
      await c.charge(4_000n);
      await c.accept(7_000n);
      await c.charge(5_000n);
      expect(await c.kept()).toEqual([voucher(4_000n), voucher(6_000n)]);
      // Any other write of the channel keeps them (the settle recording what moved on chain).
      await c.write({ settledOnChain: 4_000n });
      expect(await c.kept()).toEqual([voucher(4_000n), voucher(6_000n)]);

      // Two vouchers accepted before the first one's charge: the first is kept until it is spent.
      const d = await channel();
      await d.accept(1_000n);
      await d.charge(1_000n);
      await d.accept(2_000n);
      await d.accept(3_000n);
      await d.charge(2_000n);
      expect(await d.kept()).toEqual([voucher(2_000n), voucher(3_000n)]);
    });

    it("lists written channels for the settlement loop until forgotten; values expire, finished ones sooner", async () => {
      const state = make({ activeMs: 600, finishedMs: 150 });
      const [open, closed] = [channelId(), channelId()];
      await state.channels.update(open, () => ({
        op: "set" as const,
        value: { finalized: false },
        result: null,
      }));
      await state.channels.update(closed, () => ({
        op: "set" as const,
        value: { finalized: true },
        result: null,
      }));
      expect(await state.channelIds()).toEqual(expect.arrayContaining([open, closed]));
      await state.forgetChannel(closed);
      expect(await state.channelIds()).not.toContain(closed);
      expect(await state.channelIds()).toContain(open);
      await new Promise((r) => setTimeout(r, 300));
      expect(await state.channels.get(closed)).toBeNull();
      expect(await state.channels.get(open)).toEqual({ finalized: false });
      await new Promise((r) => setTimeout(r, 400));
      expect(await state.channels.get(open)).toBeNull();
    });
  },
);

describe("mppx state in Redis", () => {
  it("writes under the service's prefix in mppx's encoding, every key with a TTL (a replay claim's is its challenge's expiry)", async () => {
    const state = redisMppxState(redis, `${prefix}mpp:`);
    const id = `0x${randomBytes(32).toString("hex")}`;
    await state.channels.put(id, { spent: 123n });
    expect(await redis.get(`${prefix}mpp:channel:${id}`)).toBe('{"spent":"123#__bigint"}');
    expect(await redis.pTTL(`${prefix}mpp:channel:${id}`)).toBeGreaterThan(29 * 24 * 3_600_000);
    const expires = Date.now() + 5 * 60_000;
    expect(await state.charges.tryClaim?.("mppx:charge:0xabc", expires)).toBe(true);
    expect(await redis.pExpireTime(`${prefix}mpp:replay:mppx:charge:0xabc`)).toBe(expires);
  });
});
