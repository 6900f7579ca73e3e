// The scheme-neutral payment core, driven with plain objects: a protocol and two schemes made for
// this test (they speak an invented header, `X-Test-Pay: <scheme> <key> <payer> <amount>`), the
// real in-memory stores, no gRPC. What it proves holds for every real scheme: the core routes each
// credential to its own scheme, leaves a broken scheme out of the 402, holds a payment under a
// token only it generates, frees what it could not use, and records each outcome once.
// Settles across replicas sharing a store are in core-replicas.test.ts; the fixtures in core.support.ts.
import { beforeEach, describe, expect, it } from "vitest";
import type { PricedCall } from "../../services/payment-verifier/src/core/types.ts";
import {
  alpha,
  beta,
  build,
  call,
  events,
  outageStore,
  pay,
  payments,
  REVERTED,
  resetCore,
  settledWithLostBegin,
} from "./core.support.ts";

beforeEach(resetCore);

describe("payment core (with a protocol and schemes made for this test)", () => {
  it("renders one offer header per protocol listing every scheme, and leaves a scheme that is down out alone", async () => {
    expect(await payments.challenge(call(), "")).toEqual([
      { name: "X-Test-Offer", value: "alpha@0.005,beta@0.005" },
    ]);
    beta.down = true;
    expect(await payments.challenge(call(), "why")).toEqual([
      { name: "X-Test-Offer", value: "alpha@0.005;why" },
    ]);
    alpha.down = true;
    expect(await payments.challenge(call(), "")).toEqual([]);
  });

  it("hands each credential to the scheme it belongs to, and names what is offered for an unknown one", async () => {
    const a = await payments.verify(call(), pay("alpha", "k1"));
    const b = await payments.verify(call(), pay("beta", "k1"));
    expect([a.valid, b.valid]).toEqual([true, true]);
    expect([a.valid && a.scheme, b.valid && b.scheme]).toEqual(["alpha", "beta"]);
    expect([alpha.verifies, beta.verifies]).toEqual([1, 1]);
    const unknown = await payments.verify(call(), pay("gamma", "k1"));
    expect(unknown).toMatchObject({ valid: false, code: "payment_invalid" });
    expect(!unknown.valid && unknown.reason).toContain("offered: alpha, beta");
    const malformed = await payments.verify(call(), pay("alpha", "k2", "0xp", "bad"));
    expect(!malformed.valid && malformed.reason).toBe("amount is not a number");
    expect(await payments.verify(call(), [])).toMatchObject({ valid: false, code: "payment_required" });
  });

  it("serves a payment once: the winner's payment id is mesh-generated, a replay is refused after settlement", async () => {
    const calls = [call(), call(), call()];
    const results = await Promise.all(calls.map((c) => payments.verify(c, pay("alpha", "once"))));
    const index = results.findIndex((r) => r.valid);
    expect(results.filter((r) => r.valid)).toHaveLength(1);
    const winner = results[index] as Extract<(typeof results)[number], { valid: true }>;
    expect(winner.paymentId).toMatch(/^alpha:once#[0-9a-f-]{36}$/);
    expect(alpha.verifies).toBe(1); // the losers never reached the scheme
    const winnerCall = calls[index] as PricedCall;
    const settled = await payments.settle(winnerCall, winner.paymentId, pay("alpha", "once"));
    expect(settled).toMatchObject({
      settled: true,
      headers: [{ name: "X-Test-Receipt", value: "alpha:once" }],
    });
    const replay = await payments.verify(call(), pay("alpha", "once"));
    expect(!replay.valid && replay.reason).toMatch(/already used \(settled in tx-alpha:once\)/);
    expect(events.map((e) => e.outcome)).toEqual(["settled"]);
  });

  it("settles only with the payment id it issued, for the request and call it was verified for", async () => {
    const c = call();
    const v = await payments.verify(c, pay("alpha", "owned"));
    if (!v.valid) throw new Error(v.reason);
    const [key] = v.paymentId.split("#");
    for (const [who, paymentId] of [
      [c, `${key}#forged-token`],
      [{ ...c, requestId: "another-request" }, v.paymentId],
      [c, "no-hash-here"],
    ] as const) {
      const s = await payments.settle(who, paymentId, pay("alpha", "owned"));
      expect(s.settled).toBe(false);
    }
    const otherCall = { ...call("/api/chain/erc721-tokens"), requestId: c.requestId };
    const wrongCall = await payments.settle(otherCall, v.paymentId, pay("alpha", "owned"));
    expect(!wrongCall.settled && wrongCall.reason).toBe("the payment was verified for another call");
    expect(alpha.settles).toBe(0);
  });

  it("a repeated Settle of the same request gets the same answer without collecting twice", async () => {
    const c = call();
    const v = await payments.verify(c, pay("alpha", "twice"));
    if (!v.valid) throw new Error(v.reason);
    const first = await payments.settle(c, v.paymentId, pay("alpha", "twice"));
    const again = await payments.settle(c, v.paymentId, pay("alpha", "twice"));
    expect(again).toEqual(first);
    expect(alpha.settles).toBe(1);
  });

  it("frees the payment when verification fails or its facilitator is down, so it can be paid again", async () => {
    alpha.verdict = { ok: false, code: "payment_invalid", reason: "balance too low" };
    expect(await payments.verify(call(), pay("alpha", "retry"))).toMatchObject({
      valid: false,
      reason: "balance too low",
    });
    alpha.down = true;
    expect(await payments.verify(call(), pay("alpha", "retry"))).toMatchObject({
      valid: false,
      code: "service_unavailable",
    });
    alpha.down = false;
    alpha.verdict = { ok: true };
    expect((await payments.verify(call(), pay("alpha", "retry"))).valid).toBe(true);
  });

  it("frees, once the store answers again, what a call in flight during a store outage could not: the next Verify of the same payment goes through", async () => {
    const store = outageStore();
    build(undefined, store);
    const pending = [call(), call()];
    const verified = [];
    for (const [i, c] of pending.entries()) {
      const v = await payments.verify(c, pay("alpha", `outage${i}`));
      if (!v.valid) throw new Error(v.reason);
      verified.push(v);
    }
    store.down = true;
    // One call's node never answered (Release), the other's did but its Settle could not begin.
    await payments.release(
      pending[0]?.requestId ?? "",
      pending[0],
      verified[0]?.paymentId ?? "",
      pay("alpha", "outage0"),
      "timeout",
    );
    const settle = await payments.settle(
      pending[1] as PricedCall,
      verified[1]?.paymentId ?? "",
      pay("alpha", "outage1"),
    );
    expect(settle).toMatchObject({ settled: false, code: "service_unavailable" });
    expect(await payments.verify(call(), pay("alpha", "outage0"))).toMatchObject({
      valid: false,
      code: "service_unavailable",
    });
    expect(alpha.releases).toBe(0);
    store.down = false;
    // Back: the payer's very next calls with the same payments are verified; the scheme's holds were undone.
    expect((await payments.verify(call(), pay("alpha", "outage0"))).valid).toBe(true);
    expect((await payments.verify(call(), pay("alpha", "outage1"))).valid).toBe(true);
    expect(alpha.releases).toBe(2);
    expect(alpha.settles).toBe(0);
    expect(events.map((e) => e.outcome)).toEqual(["released", "released"]);
  });

  it("frees a reservation whose answer was lost (taken in the store, the reply never came) once the store answers: the payer's retry of the same payment goes through", async () => {
    const store = outageStore();
    build(undefined, store);
    store.repliesLost = true;
    expect(await payments.verify(call(), pay("alpha", "lost-reply"))).toMatchObject({
      valid: false,
      code: "service_unavailable",
    });
    store.repliesLost = false;
    expect((await payments.verify(call(), pay("alpha", "lost-reply"))).valid).toBe(true);
  });

  it("a retried Settle whose first begin lost its answer (the payment left settling under this replica, nothing running) takes it over at once, not 503 at the deadline", async () => {
    const { c, v } = await settledWithLostBegin("lost-begin");
    expect(alpha.settles).toBe(0);
    const retried = await payments.settle(c, v.paymentId, pay("alpha", "lost-begin"), Date.now() + 3_000);
    expect(retried).toMatchObject({ settled: true });
    expect(alpha.settles).toBe(1);
    expect(alpha.settledAs[0]?.takenOver).toBe(true);
  });

  it("a retried Settle of a call whose settlement failed, while its reservation's drop waits for the store, gets the same answer: the settlement is not run again", async () => {
    const store = outageStore();
    build(undefined, store);
    alpha.settleResult = REVERTED;
    const c = call();
    const v = await payments.verify(c, pay("alpha", "drop-later"));
    if (!v.valid) throw new Error(v.reason);
    store.failing = "drop";
    const first = await payments.settle(c, v.paymentId, pay("alpha", "drop-later"));
    expect(first).toMatchObject({ settled: false, code: "payment_invalid" });
    const again = await payments.settle(c, v.paymentId, pay("alpha", "drop-later"), Date.now() + 3_000);
    expect(again).toEqual(first);
    expect(alpha.settles).toBe(1);
    // The drop lands once the store answers: the payment can be paid again.
    store.failing = undefined;
    alpha.settleResult = undefined;
    expect((await payments.verify(call(), pay("alpha", "drop-later"))).valid).toBe(true);
  });

  it("a Settle whose begin lost its answer (the payment left settling, nothing run) frees it once the store answers: the payer's next Verify of it goes through, the scheme's hold undone", async () => {
    const { store } = await settledWithLostBegin("lost-begin-new-call");
    expect((await store.get("alpha:lost-begin-new-call"))?.state).toBe("settling");
    // The payer's next call with the same payment (a new request, not a retried Settle).
    expect((await payments.verify(call(), pay("alpha", "lost-begin-new-call"))).valid).toBe(true);
    expect(alpha.settles).toBe(0);
    expect(alpha.releases).toBe(1);
    expect(events.map((e) => e.outcome)).toEqual(["released"]);
  });

  it("answers a refusal that cannot change from memory, without asking the scheme again", async () => {
    alpha.verdict = { ok: false, code: "payment_invalid", reason: "bad signature", final: true };
    for (let i = 0; i < 5; i++) {
      expect(await payments.verify(call(), pay("alpha", "forged"))).toMatchObject({
        valid: false,
        reason: "bad signature",
      });
    }
    expect(alpha.verifies).toBe(1);
    alpha.verdict = { ok: false, code: "payment_invalid", reason: "balance too low" };
    for (let i = 0; i < 3; i++) await payments.verify(call(), pay("alpha", "poor"));
    expect(alpha.verifies).toBe(4); // not final: asked each time
  });

  it("limits payment attempts per client and per payer with rate_limited", async () => {
    build({ perSecond: 1, burst: 3 });
    const outcomes = [];
    for (let i = 0; i < 5; i++)
      outcomes.push(await payments.verify(call(undefined, "10.9.9.9"), pay("alpha", `c${i}`, `0xp${i}`)));
    expect(outcomes.map((o) => (o.valid ? "ok" : o.code))).toEqual([
      "ok",
      "ok",
      "ok",
      "rate_limited",
      "rate_limited",
    ]);
    const samePayer = [];
    for (let i = 0; i < 4; i++)
      samePayer.push(await payments.verify(call(undefined, `10.1.1.${i}`), pay("alpha", `p${i}`, "0xsame")));
    expect(samePayer.map((o) => (o.valid ? "ok" : o.code))).toEqual(["ok", "ok", "ok", "rate_limited"]);
    expect(alpha.verifies).toBe(6);
  });

  it("counts forged payments naming a payer against the client only: the payer's own payments are served", async () => {
    build({ perSecond: 1, burst: 3 });
    for (let i = 0; i < 10; i++) alpha.forged.add(`forged${i}`);
    const flood = [];
    for (let i = 0; i < 10; i++)
      flood.push(await payments.verify(call(undefined, "10.6.6.6"), pay("alpha", `forged${i}`, "0xvictim")));
    expect(flood.map((o) => (o.valid ? "ok" : o.code))).toEqual([
      ...Array(3).fill("payment_invalid"),
      ...Array(7).fill("rate_limited"),
    ]);
    expect(alpha.verifies).toBe(0); // refused before the reservation and the scheme's verify
    const genuine = [];
    for (let i = 0; i < 3; i++)
      genuine.push(
        await payments.verify(call(undefined, `10.7.7.${i}`), pay("alpha", `real${i}`, "0xVICTIM")),
      );
    expect(genuine.map((o) => o.valid)).toEqual([true, true, true]);
  });

  it("counts against the payer only payments whose signature was recovered to it", async () => {
    build({ perSecond: 1, burst: 3 });
    // Signatures left to the facilitator (a smart wallet's, ERC-6492) prove nothing of the payer yet.
    for (let i = 0; i < 6; i++) alpha.unproven.add(`sw${i}`);
    const outcomes = [];
    for (let i = 0; i < 6; i++)
      outcomes.push(
        await payments.verify(call(undefined, `10.8.8.${i}`), pay("alpha", `sw${i}`, "0xwallet")),
      );
    expect(outcomes.map((o) => o.valid)).toEqual(Array(6).fill(true));
  });

  it("counts credentials that do not decode against the client's attempts", async () => {
    build({ perSecond: 1, burst: 3 });
    const outcomes = [];
    for (let i = 0; i < 5; i++)
      outcomes.push(await payments.verify(call(undefined, "10.5.5.5"), pay("alpha", `k${i}`, "0xp", "bad")));
    expect(outcomes.map((o) => (o.valid ? "ok" : o.code))).toEqual([
      "payment_invalid",
      "payment_invalid",
      "payment_invalid",
      "rate_limited",
      "rate_limited",
    ]);
    // Another client is not limited by it.
    expect((await payments.verify(call(undefined, "10.5.5.6"), pay("alpha", "fine"))).valid).toBe(true);
  });

  it("refuses a payment its payer's balance does not cover with the payer's other payments in flight, until they end", async () => {
    alpha.draws = true;
    alpha.verdict = { ok: true, balance: "12000" };
    const firstCall = call();
    const first = await payments.verify(firstCall, pay("alpha", "d1", "0xrich", "5000"));
    const second = await payments.verify(call(), pay("alpha", "d2", "0xRICH", "5000"));
    const third = await payments.verify(call(), pay("alpha", "d3", "0xrich", "5000"));
    expect([first.valid, second.valid, third.valid]).toEqual([true, true, false]);
    expect(third).toMatchObject({ code: "payment_invalid", reason: expect.stringContaining("12000") });
    // Another payer's balance is its own.
    expect((await payments.verify(call(), pay("alpha", "o1", "0xother", "5000"))).valid).toBe(true);
    // Once the first is released (its call got no answer), the refused payment goes through.
    if (!first.valid) throw new Error("first refused");
    await payments.release(
      firstCall.requestId,
      firstCall,
      first.paymentId,
      pay("alpha", "d1", "0xrich", "5000"),
      "",
    );
    expect((await payments.verify(call(), pay("alpha", "d3", "0xrich", "5000"))).valid).toBe(true);
    expect((await payments.verify(call(), pay("alpha", "d4", "0xrich", "5000"))).valid).toBe(false);
    // Without a balance from the scheme (it could not read one), nothing is refused for it.
    alpha.verdict = { ok: true };
    expect((await payments.verify(call(), pay("alpha", "d5", "0xrich", "5000"))).valid).toBe(true);
  });

  it("releases only for the holder, tells the scheme to undo its hold, and records it once", async () => {
    const c = call();
    const v = await payments.verify(c, pay("beta", "rel"));
    if (!v.valid) throw new Error(v.reason);
    await payments.release("another-request", c, v.paymentId, pay("beta", "rel"), "upstream_timeout");
    expect(events).toEqual([]);
    await payments.release(c.requestId, c, v.paymentId, pay("beta", "rel"), "upstream_timeout");
    await payments.release(c.requestId, c, v.paymentId, pay("beta", "rel"), "upstream_timeout");
    expect(events.map((e) => e.outcome)).toEqual(["released"]);
    expect(beta.releases).toBe(1);
    expect((await payments.verify(call(), pay("beta", "rel"))).valid).toBe(true);
  });

  it("serves a payment whose money already moved without collecting it again", async () => {
    alpha.verdict = { ok: true, collected: { transaction: "0xlanded" } };
    const c = call();
    const v = await payments.verify(c, pay("alpha", "landed"));
    if (!v.valid) throw new Error(v.reason);
    const s = await payments.settle(c, v.paymentId, pay("alpha", "landed"));
    expect(s).toMatchObject({
      settled: true,
      collection: { kind: "transaction", transaction: "0xlanded" },
      headers: [{ name: "X-Test-Receipt", value: "alpha:landed@0xlanded" }],
    });
    expect(alpha.settles).toBe(0);
    alpha.verdict = { ok: true };
    expect((await payments.verify(call(), pay("alpha", "landed"))).valid).toBe(false);
  });

  it("forgets a payment whose settlement moved nothing, and records the failure", async () => {
    alpha.settleResult = REVERTED;
    const c = call();
    const v = await payments.verify(c, pay("alpha", "failing"));
    if (!v.valid) throw new Error(v.reason);
    const s = await payments.settle(c, v.paymentId, pay("alpha", "failing"));
    expect(s).toMatchObject({ settled: false, code: "payment_invalid", reason: "transfer reverted" });
    expect(events.map((e) => e.outcome)).toEqual(["failed"]);
    expect(events[0]?.reservation.token).not.toBe(c.requestId);
    alpha.settleResult = undefined;
    expect((await payments.verify(call(), pay("alpha", "failing"))).valid).toBe(true);
  });

  it("records an accrual to a channel as such", async () => {
    beta.settleResult = {
      ok: true,
      collection: { kind: "accrual", channel: "0xchan", amount: "5000", cumulative: "15000" },
      receipt: [],
    };
    const c = call();
    const v = await payments.verify(c, pay("beta", "voucher"));
    if (!v.valid) throw new Error(v.reason);
    const s = await payments.settle(c, v.paymentId, pay("beta", "voucher"));
    expect(s).toMatchObject({ settled: true, collection: { kind: "accrual", channel: "0xchan" } });
    expect(events.map((e) => e.outcome)).toEqual(["accrued"]);
  });
});
