// One contract suite for the payment stores that are written twice — a Redis Lua script and its
// in-memory stand-in: the reservation state machine, the attempt limits and the state mppx keeps
// for MPP (replay claims, session channels) must behave the same,
// or the embedded default would not show what production does.
// This file: the reservation state machine. The attempt limits and payer penalty are in
// attempt-limits.contract.test.ts, mppx's state in mppx-state.contract.test.ts; the stores in
// stores.contract.support.ts.
import { beforeAll, describe, expect, it } from "vitest";
import type { ReservationStore } from "../../services/payment-verifier/src/stores/reservations.ts";
import { eventually } from "../support/eventually.ts";
import { useContractStores } from "./stores.contract.support.ts";
import { paymentFacts as facts, uniqueId } from "./support.ts";

const { stores } = useContractStores();

describe.each(stores)("reservation store contract: %s", (_name, make) => {
  let store: ReservationStore;
  beforeAll(() => {
    store = make();
  });
  /** A payment's key of the suite's payer, as Verify makes it (on a Redis Cluster under its hash tag). */
  const payKey = (label = "k-") => store.keyOf(facts().payer, uniqueId(label));

  it("lets one of many concurrent reserves of a payment take it", async () => {
    const key = payKey();
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
    const key = payKey();
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
    const key = payKey();
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
    const key = payKey();
    const f = facts();
    const [a, b, c] = [uniqueId("replica-a-"), uniqueId("replica-b-"), uniqueId("replica-c-")];
    // A probe: another call's Settle owned by `p`, whose liveness is marked after a's for as long.
    const [probeKey, probe, p] = [payKey(), facts(), uniqueId("replica-p-")];
    await store.reserve(key, "tok", f, 60_000);
    await store.reserve(probeKey, "tok", probe, 60_000);
    await store.heartbeat(a, 300);
    await store.heartbeat(p, 300);
    await store.heartbeat(b, 60_000);
    expect((await store.beginSettle(key, "tok", f.requestId, 60_000, a)).ok).toBe(true);
    expect((await store.beginSettle(probeKey, "tok", probe.requestId, 60_000, p)).ok).toBe(true);
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
    // a dies mid-settlement: once p's liveness (marked after a's) has lapsed, so has a's.
    const probed = await eventually(
      () => store.beginSettle(probeKey, "tok", probe.requestId, 60_000, b),
      (r) => r.ok,
      10_000,
      20,
    );
    expect(probed).toMatchObject({ ok: true, takenOver: true });
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
    const key = payKey();
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
    const lost = payKey();
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
    const taken = payKey();
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
    const key = payKey();
    const f = facts();
    await store.reserve(key, "tok", f, 60_000);
    expect(await store.release(key, "wrong", f.requestId)).toBeUndefined();
    expect(await store.release(key, "tok", uniqueId("req-"))).toBeUndefined();
    expect(await store.release(key, "tok", f.requestId)).toMatchObject({ token: "tok", scheme: "exact" });
    expect((await store.reserve(key, "next", facts(), 60_000)).ok).toBe(true);
  });

  it("answers a release run again under its own release id what it freed; any other release gets nothing", async () => {
    const key = payKey();
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
    const key = payKey();
    const f = facts();
    const mark = { id: uniqueId("replica-a:"), keepMs: 50 };
    await store.reserve(key, "tok", f, 60_000);
    expect(await store.release(key, "tok", f.requestId, mark)).toMatchObject({ token: "tok" });
    // Asked again until the mark has lapsed: a release of a lapsed mark finds nothing.
    expect(
      await eventually(() => store.release(key, "tok", f.requestId, mark), undefined, 10_000, 20),
    ).toBeUndefined();
  });

  it("drops a settling payment whose settlement moved nothing, for its holder only", async () => {
    const key = payKey();
    const f = facts();
    await store.reserve(key, "tok", f, 60_000);
    await store.beginSettle(key, "tok", f.requestId, 60_000, "replica-a");
    expect(await store.drop(key, "someone-else")).toBe(false);
    expect((await store.get(key))?.state).toBe("settling");
    expect(await store.drop(key, "tok")).toBe(true);
    expect(await store.get(key)).toBeUndefined();
  });

  it("records the verdict (money that already moved, the scheme's hold) on the holder's reservation only", async () => {
    const key = payKey();
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
    const [a, b, c, d, e] = ["a", "b", "c", "d", "e"].map((x) => payKey(`k-${x}-`)) as string[] as [
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
    const other = await store.reserve(payKey(), "tok", facts(), 60_000, undefined, {
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
    expect(await drawn(payKey(), "10")).toBe(11n); // d and the new one
  });

  it("keeps counting the draw of a payment dropped with its transfer broadcast, until the same payment takes its place", async () => {
    const account = uniqueId("acct-");
    const draw = (amount: string) => ({ account, amount, ttlMs: 60_000 });
    const key = payKey();
    const f = facts();
    await store.reserve(key, "tok", f, 60_000, undefined, draw("5"));
    await store.heartbeat("replica-a", 60_000);
    await store.beginSettle(key, "tok", f.requestId, 60_000, "replica-a");
    expect(await store.drop(key, "tok", undefined, true)).toBe(true);
    // Its transfer may still land: the payer's next payment still sees it drawn.
    const next = await store.reserve(payKey(), "tok", facts(), 60_000, undefined, draw("3"));
    expect(next.ok && next.drawn).toBe(8n);
    // The client retries the same payment: one draw for it, not two.
    const again = await store.reserve(key, "tok2", facts(), 60_000, undefined, draw("5"));
    expect(again.ok && again.drawn).toBe(8n);
  });

  it("stops counting a draw after its TTL (a holder that died)", async () => {
    const account = uniqueId("acct-");
    await store.reserve(payKey(), "tok", facts(), 60_000, undefined, {
      account,
      amount: "5",
      ttlMs: 50,
    });
    // The draw's lapse, read by a payment that draws nothing.
    const nothing = { account, amount: "0", ttlMs: 60_000 };
    const probe = await eventually(
      () => store.reserve(payKey(), "tok", facts(), 60_000, undefined, nothing),
      (r) => r.ok && r.drawn === 0n,
      10_000,
      20,
    );
    expect(probe.ok && probe.drawn).toBe(0n);
    const next = await store.reserve(payKey(), "tok", facts(), 60_000, undefined, {
      account,
      amount: "3",
      ttlMs: 60_000,
    });
    expect(next.ok && next.drawn).toBe(3n);
  });

  it("forgets a reservation after its time to live", async () => {
    const key = payKey();
    await store.reserve(key, "tok", facts(), 50);
    expect(await eventually(() => store.get(key), undefined, 10_000, 20)).toBeUndefined();
    expect((await store.reserve(key, "tok2", facts(), 60_000)).ok).toBe(true);
  });
});
