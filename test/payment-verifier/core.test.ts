// The scheme-neutral payment core, driven with plain objects: a protocol and two schemes made for
// this test (they speak an invented header, `X-Test-Pay: <scheme> <key> <payer> <amount>`), the
// real in-memory stores, no gRPC. What it proves holds for every real scheme: the core routes each
// credential to its own scheme, leaves a broken scheme out of the 402, holds a payment under a
// token only it generates, frees what it could not use, and records each outcome once.
import { ENDPOINTS, type Endpoint } from "@tollgate/catalog";
import { createLogger, createRegistry } from "@tollgate/platform";
import { beforeEach, describe, expect, it } from "vitest";
import type { CallOutcome } from "../../services/payment-verifier/src/core/events.ts";
import { createPaymentMetrics } from "../../services/payment-verifier/src/core/metrics.ts";
import { Payments } from "../../services/payment-verifier/src/core/payments.ts";
import {
  type Claim,
  FacilitatorUnavailableError,
  findHeader,
  type Header,
  type ParsedPayment,
  type PaymentProtocol,
  type PaymentScheme,
  type PricedCall,
  type SettleResult,
  type Verdict,
  type VerifiedPayment,
} from "../../services/payment-verifier/src/core/types.ts";
import { RefusalMemory } from "../../services/payment-verifier/src/stores/attempt-limits.ts";
import type {
  Reservation,
  ReservationStore,
} from "../../services/payment-verifier/src/stores/reservations.ts";
import { MemoryReservationStore } from "../../services/payment-verifier/src/stores/reservations-memory.ts";

type Credential = { scheme: string; key: string; payer: string; amount: string };

const testProtocol: PaymentProtocol<Credential, string> = {
  name: "test",
  decode(credentials) {
    const h = findHeader(credentials, "X-Test-Pay");
    if (!h) return { kind: "absent" };
    const [scheme, key, payer, amount] = h.value.split(" ");
    if (!scheme || !key || !payer || !amount) return { kind: "invalid", reason: "X-Test-Pay is malformed" };
    return { kind: "credential", credential: { scheme, key, payer, amount } };
  },
  async render(_call, offers, error) {
    return [{ name: "X-Test-Offer", value: `${offers.join(",")}${error ? `;${error}` : ""}` }];
  },
};

/** A scheme made for this test: its behaviour is set per test through its fields. */
class TestScheme implements PaymentScheme<Credential, string, Credential> {
  readonly protocol = testProtocol;
  verdict: Verdict = { ok: true };
  settleResult: SettleResult | undefined;
  down = false;
  verifies = 0;
  settles = 0;
  /** Set: each settle waits for it (a transfer waiting to be mined). */
  gate: Promise<void> | undefined;
  /** What each settle was told about the payment's Verify. */
  readonly settledAs: (VerifiedPayment | undefined)[] = [];
  releases = 0;
  /** Payment keys whose signature this scheme's authenticate refuses: forged, whatever payer they name. */
  readonly forged = new Set<string>();
  /** Payment keys whose signature this scheme cannot check locally (a smart wallet's): not proven. */
  readonly unproven = new Set<string>();
  /** Set: each payment draws its amount from its payer's balance when settled. */
  draws = false;
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
  async authenticate(_call: PricedCall, p: ParsedPayment<Credential>) {
    if (!this.forged.has(p.payload.key))
      return { ok: true as const, proven: !this.unproven.has(p.payload.key) };
    return {
      ok: false as const,
      code: "payment_invalid" as const,
      reason: "not the payer's signature",
      final: true,
    };
  }
  async init() {}
  async offers(call: PricedCall) {
    if (this.down) throw new FacilitatorUnavailableError(`${this.name} is down`);
    return [`${this.name}@${call.endpoint.price}`];
  }
  claim(c: Credential): Claim<Credential> {
    if (c.scheme !== this.name) return { kind: "not-mine" };
    if (c.amount === "bad") return { kind: "invalid", reason: "amount is not a number" };
    return {
      kind: "payment",
      payment: {
        key: `${this.name}:${c.key}`,
        payer: c.payer,
        amount: c.amount,
        asset: "T",
        paymentNetwork: "test:1",
        ...(this.draws ? { draw: c.amount } : {}),
        payload: c,
      },
    };
  }
  async verify(): Promise<Verdict> {
    this.verifies++;
    if (this.down) throw new FacilitatorUnavailableError(`${this.name} is down`);
    return this.verdict;
  }
  async settle(
    _call: PricedCall,
    p: ParsedPayment<Credential>,
    verified?: VerifiedPayment,
  ): Promise<SettleResult> {
    this.settles++;
    this.settledAs.push(verified);
    await this.gate;
    return (
      this.settleResult ?? {
        ok: true,
        collection: { kind: "transaction", transaction: `tx-${p.key}` },
        receipt: [{ name: "X-Test-Receipt", value: p.key }],
      }
    );
  }
  async release() {
    this.releases++;
  }
  receiptFor(_c: PricedCall, p: ParsedPayment<Credential>, tx: string): Header[] {
    return [{ name: "X-Test-Receipt", value: `${p.key}@${tx}` }];
  }
  retentionMs() {
    return 60_000;
  }
  meta(call: PricedCall) {
    return { costUsdc: call.endpoint.price, paymentChain: "test:1", paymentToken: "T" };
  }
  methods() {
    return [
      {
        protocol: "test",
        scheme: this.name,
        network: "test:1",
        asset: "T",
        symbol: "T",
        decimals: 6,
        payTo: "me",
        method: "",
      },
    ];
  }
  async close() {}
}

const endpoint = (path: string) => ENDPOINTS.find((e) => e.path === path) as Endpoint;
let n = 0;
const call = (path = "/api/chain/call", client = "10.0.0.1"): PricedCall => ({
  requestId: `req-${++n}`,
  endpoint: endpoint(path),
  network: "ethereum",
  url: `http://x${path}`,
  client,
});
const pay = (scheme: string, key: string, payer = "0xpayer", amount = "5000"): Header[] => [
  { name: "X-Test-Pay", value: `${scheme} ${key} ${payer} ${amount}` },
];

let alpha: TestScheme;
let beta: TestScheme;
let events: { reservation: Reservation; outcome: CallOutcome }[];
let payments: Payments;

/**
 * The in-memory reservation store, unreachable while `down` (as Redis is during an outage), or for
 * the one method named `failing`; while `repliesLost`, each call is applied and then fails (Redis
 * ran the script, the link dropped before its reply).
 */
type OutageStore = MemoryReservationStore & { down: boolean; repliesLost: boolean; failing?: string };
function outageStore(): OutageStore {
  const store = new MemoryReservationStore() as OutageStore;
  store.down = false;
  store.repliesLost = false;
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function" || prop === "close") return value;
      return async (...args: unknown[]) => {
        if (target.down || prop === target.failing) throw new Error("store unreachable");
        const result = await value.apply(target, args);
        if (target.repliesLost) throw new Error("the link dropped before the reply");
        return result;
      };
    },
  });
}

/** A settlement that moved nothing: the scheme's transfer reverted. */
const REVERTED: SettleResult = {
  ok: false,
  code: "payment_invalid",
  reason: "transfer reverted",
  transaction: "",
  receipt: [],
};

/** A call verified for `key`, whose Settle's begin Redis ran but whose answer was lost (503). */
async function settledWithLostBegin(key: string) {
  const store = outageStore();
  build(undefined, store);
  const c = call();
  const v = await payments.verify(c, pay("alpha", key));
  if (!v.valid) throw new Error(v.reason);
  store.repliesLost = true;
  expect(await payments.settle(c, v.paymentId, pay("alpha", key))).toMatchObject({
    settled: false,
    code: "service_unavailable",
  });
  store.repliesLost = false;
  return { store, c, v };
}

function build(limits = { perSecond: 1000, burst: 1000 }, reservations = new MemoryReservationStore()) {
  payments = replica(reservations, limits);
}

/** One replica's core over `reservations` (shared by the replicas of a test). */
function replica(
  reservations: ReservationStore,
  limits = { perSecond: 1000, burst: 1000 },
  registry = createRegistry("test"),
): Payments {
  const logger = createLogger("payment-verifier");
  logger.level = "silent";
  return new Payments({
    schemes: [alpha, beta],
    reservations,
    refusals: new RefusalMemory({ max: 100, ttlMs: 60_000 }),
    limits: { perClient: limits, perPayer: limits },
    events: { record: (reservation, outcome) => events.push({ reservation, outcome }) },
    metrics: createPaymentMetrics(registry),
    logger,
    reservationTtlMs: 60_000,
  });
}

beforeEach(() => {
  alpha = new TestScheme("alpha");
  beta = new TestScheme("beta");
  events = [];
  build();
});

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
    await new Promise((r) => setTimeout(r, 200));
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
    const { c, id, credentials } = await verified("nothing");
    const first = a.settle(c, id, credentials);
    const waiting = b.settle(c, id, credentials);
    await new Promise((r) => setTimeout(r, 100));
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
    const settling = x.settle(late.c, late.id, late.credentials, Date.now() + 200);
    // Another Settle of the call meets it still settling at its own deadline: 503, outcome unknown.
    const waiting = await y.settle(late.c, late.id, late.credentials, Date.now() + 700);
    expect(waiting).toMatchObject({ settled: false, code: "service_unavailable" });
    expect(await counted(ry, "payment_settle_outcome_unknown_total")).toBe(1);
    await new Promise((r) => setTimeout(r, 50));
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
    await new Promise((r) => setTimeout(r, 20));
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
    await new Promise((r) => setTimeout(r, 50));
    a.close(); // cut off: no more heartbeats, its liveness lapses within 2 s
    const taken = await b.settle(c, id, credentials);
    expect(taken.settled).toBe(true);
    open(); // the cut-off owner's settlement ends failed, its charge unknown
    expect(await first).toMatchObject({ settled: false });
    await new Promise((r) => setTimeout(r, 20));
    expect(undone).toBe(0);
    b.close();
  });

  it("takes the settlement over once its owner died (liveness lapsed), telling the scheme; not before", async () => {
    const { c, id, credentials } = await verified("orphan");
    void a.settle(c, id, credentials); // never answers: its process dies
    await new Promise((r) => setTimeout(r, 50));
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
    await new Promise((r) => setTimeout(r, 50));
    a.close(); // no more heartbeats: its liveness lapses within 2 s
    await new Promise((r) => setTimeout(r, 2_300));
    shared.repliesLost = true;
    expect(await b.settle(c, v.paymentId, credentials)).toMatchObject({
      settled: false,
      code: "service_unavailable",
    });
    shared.repliesLost = false;
    // Its deferred clean-up ran (every 0.5 s): the record is as the takeover left it.
    await new Promise((r) => setTimeout(r, 1_200));
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
    for (let i = 0; i < 30 && store.marks < 2; i++) await new Promise((r) => setTimeout(r, 100));
    expect(store.marks).toBe(2);
    expect(await used("outage")).toBe(
      "this payment was already used (settled in tx-alpha:outage); sign a new payment",
    );
    expect(await b.settle(c, id, credentials)).toMatchObject({ settled: true, headers: first.headers });
    expect(alpha.settles).toBe(1);
    a.close();
    b.close();
  });
});
