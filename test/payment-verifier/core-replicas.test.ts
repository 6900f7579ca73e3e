// The payment core's Settle across replicas sharing one reservation store: one settlement of a call
// at a time (a second Settle joins or waits), takeover once the owner's liveness lapses, a takeover
// whose answer was lost, and Settle answering before its `settled` record is written. Fixtures are
// in core.support.ts.
import { createRegistry } from "@tollgate/platform";
import { beforeEach, describe, expect, it } from "vitest";
import type { Payments } from "../../services/payment-verifier/src/core/payments.ts";
import type { Header } from "../../services/payment-verifier/src/core/types.ts";
import { MemoryReservationStore } from "../../services/payment-verifier/src/stores/reservations-memory.ts";
import { eventually, sleep, until } from "../support/eventually.ts";
import { alpha, call, events, outageStore, pay, REVERTED, replica, resetCore } from "./core.support.ts";
import { paymentFacts } from "./support.ts";

beforeEach(resetCore);

describe("payment core: one Settle of a call at a time, across replicas sharing the store", () => {
  let store: MemoryReservationStore;
  let a: Payments;
  let b: Payments;
  let open: () => void;
  beforeEach(async () => {
    store = new MemoryReservationStore();
    [a, b] = [replica(store), replica(store)];
    await a.start();
    await b.start();
    alpha.gate = new Promise((r) => {
      open = r;
    });
  });

  /** The store's beginSettle answers that found a call busy (a second Settle waiting), counted. */
  function countBusy(s: MemoryReservationStore) {
    const seen = { count: 0 };
    const begin = s.beginSettle.bind(s);
    s.beginSettle = (async (...args: Parameters<typeof begin>) => {
      const r = await begin(...args);
      if (!r.ok && r.busy) seen.count++;
      return r;
    }) as typeof begin;
    return seen;
  }

  async function verified(key: string) {
    const c = call();
    const v = await a.verify(c, pay("alpha", key));
    if (!v.valid) throw new Error(v.reason);
    return { c, id: v.paymentId, credentials: pay("alpha", key) };
  }

  it("a second Settle of the call on the owner's replica joins the settlement in flight; on another, it waits for its outcome", async () => {
    const { c, id, credentials } = await verified("joined");
    const first = a.settle(c, id, credentials);
    const again = a.settle(c, id, credentials);
    const elsewhere = b.settle(c, id, credentials);
    await until("the owner's settlement reached the scheme", () => alpha.settles === 1, 10_000, 5);
    // time-based: proves the two others do NOT reach the scheme while the first holds it.
    await sleep(100);
    expect(alpha.settles).toBe(1); // the others wait
    open();
    const outcomes = await Promise.all([first, again, elsewhere]);
    expect(outcomes.map((o) => o.settled)).toEqual([true, true, true]);
    expect(outcomes[1]?.headers).toEqual(outcomes[0]?.headers);
    expect(outcomes[2]?.headers).toEqual(outcomes[0]?.headers);
    expect(alpha.settles).toBe(1);
    expect(events.filter((e) => e.outcome === "settled")).toHaveLength(1);
    a.close();
    b.close();
  });

  it("a waiting Settle answers 503 when the owner's settlement moved nothing, and before its caller's deadline", async () => {
    alpha.settleResult = {
      ok: false,
      code: "payment_invalid",
      reason: "reverted",
      transaction: "",
      receipt: [],
    };
    const busy = countBusy(store);
    const { c, id, credentials } = await verified("nothing");
    const first = a.settle(c, id, credentials);
    const waiting = b.settle(c, id, credentials);
    await until("the owner's settlement reached the scheme", () => alpha.settles === 1, 10_000, 5);
    await until("the other Settle found the call busy and waits", () => busy.count > 0, 10_000, 5);
    open();
    expect(await first).toMatchObject({ settled: false, code: "payment_invalid" });
    expect(await waiting).toMatchObject({ settled: false, code: "service_unavailable" });
    // Still settling at the deadline: 503 in time (0.5 s before it), the owner carries on.
    alpha.gate = new Promise(() => {});
    const slow = await verified("slow");
    void a.settle(slow.c, slow.id, slow.credentials);
    const started = Date.now();
    const late = await b.settle(slow.c, slow.id, slow.credentials, Date.now() + 800);
    expect(late).toMatchObject({ settled: false, code: "service_unavailable" });
    expect(Date.now() - started).toBeLessThan(800);
    a.close();
    b.close();
  });

  // The gateway answers such a call 503 with no data: a payer who may have paid for it is counted
  // (and logged) by the replica that knows, for a refund by hand.
  it("counts the calls answered failed while their payment collected or may collect: settled after the caller's deadline, still settling at it, a transfer not confirmed", async () => {
    const [rx, ry] = [createRegistry("test"), createRegistry("test")];
    const counted = async (registry: typeof rx, name: string) =>
      (await registry.getSingleMetric(name)?.get())?.values.find((v) => v.labels.scheme === "alpha")?.value;
    const [x, y] = [replica(store, undefined, rx), replica(store, undefined, ry)];
    await x.start();
    await y.start();
    // Collected after the deadline the caller sent (it has answered by then).
    const late = await verified("late");
    const lateDeadline = Date.now() + 200;
    const settling = x.settle(late.c, late.id, late.credentials, lateDeadline);
    // Another Settle of the call meets it still settling at its own deadline: 503, outcome unknown.
    const waiting = await y.settle(late.c, late.id, late.credentials, Date.now() + 700);
    expect(waiting).toMatchObject({ settled: false, code: "service_unavailable" });
    expect(await counted(ry, "payment_settle_outcome_unknown_total")).toBe(1);
    // The settlement is collected after its caller's deadline: the condition is the clock's.
    await until("the caller's deadline passed", () => Date.now() > lateDeadline, 10_000, 5);
    open();
    expect(await settling).toMatchObject({ settled: true });
    expect(await counted(rx, "payment_settled_after_deadline_total")).toBe(1);
    // Collected in time: not counted.
    const inTime = await verified("in-time");
    expect(await x.settle(inTime.c, inTime.id, inTime.credentials, Date.now() + 5_000)).toMatchObject({
      settled: true,
    });
    expect(await counted(rx, "payment_settled_after_deadline_total")).toBe(1);
    // A transfer broadcast and not confirmed in time: answered 503, it may still land.
    alpha.settleResult = {
      ok: false,
      code: "service_unavailable",
      reason: "settlement_pending",
      transaction: "0xsent",
      receipt: [],
    };
    const pending = await verified("pending");
    expect(await x.settle(pending.c, pending.id, pending.credentials)).toMatchObject({ settled: false });
    expect(await counted(rx, "payment_settle_outcome_unknown_total")).toBe(1);
    x.close();
    y.close();
    a.close();
    b.close();
  });

  it("a failed settlement's undo (a charge whose outcome the scheme could not learn) runs once its drop deleted the payment, so no takeover can serve the call", async () => {
    let undone = 0;
    alpha.settleResult = { ...REVERTED, undo: async () => void undone++ };
    const { c, id, credentials } = await verified("undone");
    const first = a.settle(c, id, credentials);
    open();
    expect(await first).toMatchObject({ settled: false, code: "payment_invalid" });
    await until("the reverted settlement was undone", () => undone === 1, 10_000, 5);
    expect(undone).toBe(1);
    // The call is not served by anyone after: a retry of it finds the payment gone.
    expect(await b.settle(c, id, credentials)).toMatchObject({ settled: false });
    expect(undone).toBe(1);
    a.close();
    b.close();
  });

  it("a failed settlement another replica took over meanwhile (and answered served) is not undone", async () => {
    let undone = 0;
    const { c, id, credentials } = await verified("taken-then-failed");
    const gate = alpha.gate;
    alpha.settle = async (_call, _p, verifiedAs) => {
      alpha.settles++;
      if (verifiedAs?.takenOver)
        return { ok: true, collection: { kind: "transaction", transaction: "tx-taken" }, receipt: [] };
      await gate;
      return { ...REVERTED, undo: async () => void undone++ };
    };
    const first = a.settle(c, id, credentials);
    await until("the owner's settlement reached the scheme", () => alpha.settles === 1, 10_000, 5);
    a.close(); // cut off: no more heartbeats, its liveness lapses within 2 s
    const taken = await b.settle(c, id, credentials);
    expect(taken.settled).toBe(true);
    open(); // the cut-off owner's settlement ends failed, its charge unknown
    expect(await first).toMatchObject({ settled: false });
    // time-based: proves the failed settlement is NOT undone in the moments after it ended.
    await sleep(20);
    expect(undone).toBe(0);
    b.close();
  });

  it("takes the settlement over once its owner died (liveness lapsed), telling the scheme; not before", async () => {
    const { c, id, credentials } = await verified("orphan");
    void a.settle(c, id, credentials); // never answers: its process dies
    await until("the owner's settlement reached the scheme", () => alpha.settles === 1, 10_000, 5);
    a.close(); // no more heartbeats: the owner's liveness lapses within 2 s
    const started = Date.now();
    alpha.gate = undefined;
    const taken = await b.settle(c, id, credentials);
    expect(taken.settled).toBe(true);
    expect(Date.now() - started).toBeGreaterThan(1_000);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(alpha.settledAs.map((v) => v?.takenOver ?? false)).toEqual([false, true]);
    b.close();
  });
});

describe("payment core: a takeover whose answer was lost (replicas sharing a store that loses a reply)", () => {
  it("is never abandoned (what the dead owner sent may have moved money): the record stays, and the retried Settle takes it over again and answers", async () => {
    const shared = outageStore();
    const [a, b] = [replica(shared), replica(shared)];
    await a.start();
    await b.start();
    alpha.gate = new Promise(() => {}); // the owner's settlement never finishes: its process dies
    const c = call();
    const credentials = pay("alpha", "lost-takeover");
    const v = await a.verify(c, credentials);
    if (!v.valid) throw new Error(v.reason);
    void a.settle(c, v.paymentId, credentials);
    await until("the owner's settlement reached the scheme", () => alpha.settles === 1, 10_000, 5);
    a.close(); // no more heartbeats: its liveness lapses within 2 s
    // A probe: a record whose owner is marked alive after a's last beat, for as long as a replica
    // is (ALIVE_TTL_MS, 2 s): once another replica takes it over, a's liveness has lapsed too.
    const probe = paymentFacts();
    const probeKey = shared.keyOf(probe.payer, "probe-lost-takeover");
    await shared.reserve(probeKey, "tok", probe, 60_000);
    await shared.heartbeat("probe-owner", 2_000);
    expect((await shared.beginSettle(probeKey, "tok", probe.requestId, 60_000, "probe-owner")).ok).toBe(true);
    await until(
      "the dead owner's liveness lapsed",
      async () => (await shared.beginSettle(probeKey, "tok", probe.requestId, 60_000, "prober")).ok,
    );
    shared.repliesLost = true;
    expect(await b.settle(c, v.paymentId, credentials)).toMatchObject({
      settled: false,
      code: "service_unavailable",
    });
    shared.repliesLost = false;
    // Its deferred clean-up ran (every 0.5 s): the record is as the takeover left it.
    // time-based: proves the clean-up does NOT undo the record: two of its passes go by.
    await sleep(1_200);
    expect(await shared.get("alpha:lost-takeover")).toMatchObject({ state: "settling" });
    alpha.gate = undefined;
    const again = await b.settle(c, v.paymentId, credentials, Date.now() + 3_000);
    expect(again.settled).toBe(true);
    expect(alpha.settledAs.map((x) => x?.takenOver ?? false)).toEqual([false, true]);
    b.close();
  });
});

describe("payment core: Settle answers without waiting for its `settled` record", () => {
  /** The in-memory store, whose markSettled waits for `gate` or, `refuse` times, is unreachable. */
  class SlowMarkStore extends MemoryReservationStore {
    gate: Promise<void> | undefined;
    refuse = 0;
    marks = 0;
    override async markSettled(...args: Parameters<MemoryReservationStore["markSettled"]>): Promise<void> {
      this.marks++;
      if (this.refuse > 0) {
        this.refuse--;
        throw new Error("store unreachable");
      }
      await this.gate;
      return super.markSettled(...args);
    }
  }
  let store: SlowMarkStore;
  let a: Payments;
  let b: Payments;
  beforeEach(async () => {
    store = new SlowMarkStore();
    [a, b] = [replica(store), replica(store)];
    await a.start();
    await b.start();
  });

  async function verified(key: string) {
    const c = call();
    const v = await a.verify(c, pay("alpha", key));
    if (!v.valid) throw new Error(v.reason);
    return { c, id: v.paymentId, credentials: pay("alpha", key) };
  }
  const within = <T>(p: Promise<T>, ms: number) =>
    // time-based: the deadline of a race the test fails on ("late").
    Promise.race([p, new Promise<"late">((r) => setTimeout(() => r("late"), ms))]);
  /** What the store says of a payment, as a Verify of it for another call reads it. */
  async function used(key: string) {
    const v = await a.verify(call(), pay("alpha", key));
    return v.valid ? "free" : v.reason;
  }

  it("answers while markSettled is still pending; a retry of the call meanwhile gets the same answer, here and on another replica, and nothing is collected twice", async () => {
    let land = () => {};
    store.gate = new Promise((r) => {
      land = r;
    });
    const { c, id, credentials } = await verified("unrecorded");
    const first = await within(a.settle(c, id, credentials), 1_000);
    expect(first).toMatchObject({
      settled: true,
      headers: [{ name: "X-Test-Receipt", value: "alpha:unrecorded" }],
    });
    expect(store.marks).toBe(1);
    expect(await used("unrecorded")).toBe(
      "this payment is being settled for another request; sign a new payment",
    );
    // Not yet `settled` in the store: the retry here joins the answer given, the one elsewhere waits.
    expect(await within(a.settle(c, id, credentials), 1_000)).toEqual(first);
    const elsewhere = b.settle(c, id, credentials);
    expect(await within(elsewhere, 200)).toBe("late");
    land();
    expect((await elsewhere).headers).toEqual((first as { headers: Header[] }).headers);
    expect(await used("unrecorded")).toBe(
      "this payment was already used (settled in tx-alpha:unrecorded); sign a new payment",
    );
    // Recorded: a retry here now reads the store's answer.
    expect((await a.settle(c, id, credentials)).headers).toEqual((first as { headers: Header[] }).headers);
    expect(alpha.settles).toBe(1);
    expect(events.filter((e) => e.outcome === "settled")).toHaveLength(1);
    a.close();
    b.close();
  });

  it("records the settlement once the store answers again when markSettled could not reach it, answering retries of the call meanwhile", async () => {
    store.refuse = 1;
    const { c, id, credentials } = await verified("outage");
    const first = await a.settle(c, id, credentials);
    expect(first.settled).toBe(true);
    expect(await a.settle(c, id, credentials)).toEqual(first);
    expect(store.marks).toBe(1);
    // The deferred clean-ups are tried every 0.5 s (on a loaded machine, a little later).
    expect(await eventually(() => store.marks, 2, 30_000, 100)).toBe(2);
    expect(await used("outage")).toBe(
      "this payment was already used (settled in tx-alpha:outage); sign a new payment",
    );
    expect(await b.settle(c, id, credentials)).toMatchObject({ settled: true, headers: first.headers });
    expect(alpha.settles).toBe(1);
    a.close();
    b.close();
  });
});
