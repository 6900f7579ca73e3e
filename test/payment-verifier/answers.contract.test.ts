// The first answers of payments carrying an x402 payment identifier (stores/answers.ts): the Redis
// store (one Lua script per step) and its in-memory stand-in run one suite. A claim is held by one
// payment_id; only its holder keeps an answer under it or forgets it; every record lapses.
import { beforeAll, describe, expect, it } from "vitest";
import type { AnswerStore, KeptAnswer } from "../../services/payment-verifier/src/stores/answers.ts";
import { eventually } from "../support/eventually.ts";
import { useContractStores } from "./stores.contract.support.ts";
import { uniqueId } from "./support.ts";

const { answerStores } = useContractStores();

const answer: KeptAnswer = {
  status: 200,
  headers: [{ name: "PAYMENT-RESPONSE", value: "eyJzdWNjZXNzIjp0cnVlfQ==" }],
  body: '{"data":{"block_number":"0x2a"},"error":null,"meta":{"endpoint":"/api/chain/block-number"}}',
};

describe.each(answerStores)("answer store contract: %s", (_name, make) => {
  let store: AnswerStore;
  beforeAll(() => {
    store = make();
  });

  it("lets one of many concurrent claims of an identifier take it, and answers the others with it", async () => {
    const key = uniqueId("0xpayer:pay_");
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.claim(key, `payment-${i}`, `holder-${i}`, `req-${i}`, 60_000),
      ),
    );
    const won = results.flatMap((r, i) => (r.ok ? [i] : []));
    expect(won).toHaveLength(1);
    const winner = won[0] as number;
    const winning = {
      state: "pending",
      payment: `payment-${winner}`,
      holder: `holder-${winner}`,
      requestId: `req-${winner}`,
    };
    const lost = results.filter((r) => !r.ok);
    expect(lost).toEqual(Array.from({ length: 19 }, () => ({ ok: false, current: winning })));
    expect(await store.find(key)).toEqual(winning);
  });

  it("gives a holder's own claim back to it (a retried Verify)", async () => {
    const key = uniqueId("0xpayer:pay_");
    expect(await store.claim(key, "p", "h", "r-h", 60_000)).toEqual({ ok: true });
    expect(await store.claim(key, "p", "h", "r-h", 60_000)).toEqual({ ok: true });
    expect(await store.claim(key, "p", "other", "r-other", 60_000)).toEqual({
      ok: false,
      current: { state: "pending", payment: "p", holder: "h", requestId: "r-h" },
    });
  });

  it("keeps an answer for its holder only, and keeping it again answers the same", async () => {
    const key = uniqueId("0xpayer:pay_");
    await store.claim(key, "p", "h", "r-h", 60_000);
    expect(await store.keep(key, "not-the-holder", answer, 60_000)).toBe(false);
    expect(await store.find(key)).toEqual({ state: "pending", payment: "p", holder: "h", requestId: "r-h" });
    expect(await store.keep(key, "h", answer, 60_000)).toBe(true);
    expect(await store.keep(key, "h", answer, 60_000)).toBe(true);
    expect(await store.find(key)).toEqual({
      state: "answered",
      payment: "p",
      holder: "h",
      requestId: "r-h",
      answer,
    });
    // Another payment claiming the identifier now finds the answer.
    expect(await store.claim(key, "other-payment", "h2", "r-h2", 60_000)).toEqual({
      ok: false,
      current: { state: "answered", payment: "p", holder: "h", requestId: "r-h", answer },
    });
    // An unclaimed identifier keeps nothing.
    expect(await store.keep(uniqueId("0xpayer:pay_"), "h", answer, 60_000)).toBe(false);
  });

  it("forgets a pending claim for its holder only, and never an answer", async () => {
    const key = uniqueId("0xpayer:pay_");
    await store.claim(key, "p", "h", "r-h", 60_000);
    expect(await store.forget(key, "other")).toBe(false);
    expect(await store.forget(key, "h")).toBe(true);
    expect(await store.find(key)).toBeUndefined();
    expect(await store.forget(key, "h")).toBe(false);
    // Free again: another payment may claim it.
    expect(await store.claim(key, "p2", "h2", "r-h2", 60_000)).toEqual({ ok: true });
    expect(await store.keep(key, "h2", answer, 60_000)).toBe(true);
    expect(await store.forget(key, "h2")).toBe(false);
    expect((await store.find(key))?.state).toBe("answered");
  });

  it("lets a claim and an answer lapse after their TTLs", async () => {
    const pending = uniqueId("0xpayer:pay_");
    const answered = uniqueId("0xpayer:pay_");
    await store.claim(pending, "p", "h", "r-h", 150);
    await store.claim(answered, "p", "h", "r-h", 60_000);
    expect(await store.keep(answered, "h", answer, 150)).toBe(true);
    expect(await eventually(() => store.find(pending), undefined, 10_000, 20)).toBeUndefined();
    expect(await eventually(() => store.find(answered), undefined, 10_000, 20)).toBeUndefined();
    // A lapsed claim keeps nothing: its answer came too late.
    expect(await store.keep(pending, "h", answer, 60_000)).toBe(false);
  });

  it("keeps a body exactly, whatever it holds", async () => {
    const key = uniqueId("0xpayer:pay_");
    const body = JSON.stringify({ data: { text: 'ünïcödé 🚀 "quoted" \\ back\nline' }, error: null });
    await store.claim(key, "p", "h", "r-h", 60_000);
    await store.keep(key, "h", { ...answer, status: 422, body }, 60_000);
    const found = await store.find(key);
    expect(found?.state === "answered" && found.answer).toEqual({ ...answer, status: 422, body });
  });
});
