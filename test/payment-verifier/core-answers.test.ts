// The payment core's idempotent retries (core/answers.ts; x402's payment-identifier), driven with
// the test protocol of core.support.ts, whose credential's fifth word is the identifier: a first
// answer kept for its payment and request and given again, the same payment for another request a
// conflict, another payment's conflict released, an uncharged call keeping nothing, a Verify
// retried for its own request getting its own payment id.
import { beforeEach, describe, expect, it } from "vitest";
import { alpha, answerStore, call, events, pay, payments, REVERTED, resetCore } from "./core.support.ts";

beforeEach(resetCore);

const ANSWER = {
  status: 200,
  headers: [{ name: "X-Test-Receipt", value: "alpha:k" }],
  body: '{"data":{"ok":true},"error":null}',
};

/** Verify → Settle → KeepAnswer, as the gateway runs a paid call whose node answered. */
async function served(c: ReturnType<typeof call>, credentials: ReturnType<typeof pay>) {
  const v = await payments.verify(c, credentials);
  if (!v.valid) throw new Error(v.reason);
  expect(v.answerMaxBytes).toBe(1_024);
  const s = await payments.settle(c, v.paymentId, credentials);
  expect(s.settled).toBe(true);
  expect(await payments.keepAnswer(v.paymentId, credentials, ANSWER, false)).toBe(true);
  return v.paymentId;
}

describe("payment core: payment identifiers", () => {
  it("gives the same payment for the same request its first answer again, without verifying or settling it again", async () => {
    const c = call();
    const credentials = pay("alpha", "k", "0xpayer", "5000", "pay_0123456789abcdef");
    await served(c, credentials);
    for (let i = 0; i < 3; i++) {
      const retry = await payments.verify({ ...c, requestId: `retry-${i}` }, credentials);
      expect(retry).toMatchObject({ valid: false, answer: ANSWER });
    }
    expect([alpha.verifies, alpha.settles]).toEqual([1, 1]);
    expect(events.map((e) => e.outcome)).toEqual(["settled"]);
  });

  it("does not give the answer to the same payment for another request: identifier_conflict, before anything is verified again", async () => {
    const c = call();
    const credentials = pay("alpha", "k", "0xpayer", "5000", "pay_0123456789abcdef");
    await served(c, credentials);
    for (const other of [
      { ...c, url: `${c.url}?network=sepolia` },
      { ...c, digest: "another-body" },
    ]) {
      const v = await payments.verify({ ...other, requestId: "other" }, credentials);
      expect(v.valid).toBe(false);
      expect(!v.valid && [v.code, v.answer]).toEqual(["identifier_conflict", undefined]);
    }
    expect([alpha.verifies, alpha.settles]).toEqual([1, 1]);
    // The first request's answer is still the identifier's.
    expect(await payments.verify({ ...c, requestId: "retry" }, credentials)).toMatchObject({
      answer: ANSWER,
    });
  });

  it("answers another payment with the identifier identifier_conflict and releases it, charging nothing", async () => {
    await served(call(), pay("alpha", "k", "0xpayer", "5000", "pay_0123456789abcdef"));
    const other = pay("alpha", "k2", "0xpayer", "5000", "pay_0123456789abcdef");
    const conflict = await payments.verify(call(), other);
    expect(conflict).toMatchObject({ valid: false, code: "identifier_conflict", headers: [] });
    expect(events.map((e) => e.outcome)).toEqual(["settled", "released"]);
    // Released: the same payment under a new identifier is verified and served.
    await served(call(), pay("alpha", "k2", "0xpayer", "5000", "pay_fedcba9876543210"));
    // Another payer's identifier of the same name is its own.
    await served(call(), pay("alpha", "k3", "0xother", "5000", "pay_0123456789abcdef"));
  });

  it("gives a Verify retried for its own request its own payment id; a copy from another request is in progress", async () => {
    const c = call();
    const credentials = pay("alpha", "k", "0xpayer", "5000", "pay_0123456789abcdef");
    const first = await payments.verify(c, credentials);
    const again = await payments.verify(c, credentials);
    expect(again).toEqual(first);
    const copy = await payments.verify(call(), credentials);
    expect(copy).toMatchObject({ valid: false, code: "identifier_in_progress" });
  });

  it("keeps nothing of a call that was released or whose settlement failed: the retry is served as a new call", async () => {
    const credentials = pay("alpha", "k", "0xpayer", "5000", "pay_0123456789abcdef");
    const c = call();
    const v = await payments.verify(c, credentials);
    if (!v.valid) throw new Error(v.reason);
    await payments.release(c.requestId, c, v.paymentId, credentials, "upstream_unavailable");
    await expect(answerStore.find("0xpayer:pay_0123456789abcdef")).resolves.toBeUndefined();

    const c2 = call();
    const v2 = await payments.verify(c2, credentials);
    if (!v2.valid) throw new Error(v2.reason);
    alpha.settleResult = REVERTED;
    expect((await payments.settle(c2, v2.paymentId, credentials)).settled).toBe(false);
    await expect(answerStore.find("0xpayer:pay_0123456789abcdef")).resolves.toBeUndefined();

    alpha.settleResult = undefined;
    await served(call(), credentials);
    expect(alpha.settles).toBe(2);
  });

  it("keeps no answer over the bound: a retry is then the used payment it is", async () => {
    const credentials = pay("alpha", "k", "0xpayer", "5000", "pay_0123456789abcdef");
    const c = call();
    const v = await payments.verify(c, credentials);
    if (!v.valid) throw new Error(v.reason);
    await payments.settle(c, v.paymentId, credentials);
    const large = { ...ANSWER, body: "x".repeat(1_025) };
    expect(await payments.keepAnswer(v.paymentId, credentials, large, false)).toBe(false);
    const retry = await payments.verify({ ...c, requestId: "retry" }, credentials);
    expect(retry).toMatchObject({ valid: false, code: "payment_invalid" });
    expect(!retry.valid && retry.answer).toBeUndefined();
    expect(alpha.settles).toBe(1);
  });

  it("refuses a malformed identifier before anything is verified or reserved", async () => {
    const refused = await payments.verify(call(), pay("alpha", "k", "0xpayer", "5000", "bad"));
    expect(refused).toMatchObject({ valid: false, code: "payment_invalid" });
    expect(alpha.verifies).toBe(0);
    await served(call(), pay("alpha", "k", "0xpayer", "5000", "pay_0123456789abcdef"));
  });
});
