// Fixtures of the payment core's tests (core.test.ts, core-replicas.test.ts): a protocol and two
// schemes made for the test (they speak an invented header, `X-Test-Pay: <scheme> <key> <payer>
// <amount>`), the real in-memory stores, and replicas of the core over a shared store. Each test
// file calls `beforeEach(resetCore)` so every test starts from fresh schemes and a fresh core.
import { ENDPOINTS, type Endpoint } from "@tollgate/catalog";
import { createLogger, createRegistry } from "@tollgate/platform";
import { expect } from "vitest";
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
import { MemoryAnswerStore } from "../../services/payment-verifier/src/stores/answers.ts";
import { RefusalMemory } from "../../services/payment-verifier/src/stores/attempt-limits.ts";
import type {
  Reservation,
  ReservationStore,
} from "../../services/payment-verifier/src/stores/reservations.ts";
import { MemoryReservationStore } from "../../services/payment-verifier/src/stores/reservations-memory.ts";

type Credential = { scheme: string; key: string; payer: string; amount: string; id?: string };

const testProtocol: PaymentProtocol<Credential, string> = {
  name: "test",
  decode(credentials) {
    const h = findHeader(credentials, "X-Test-Pay");
    if (!h) return { kind: "absent" };
    const [scheme, key, payer, amount, id] = h.value.split(" ");
    if (!scheme || !key || !payer || !amount) return { kind: "invalid", reason: "X-Test-Pay is malformed" };
    return { kind: "credential", credential: { scheme, key, payer, amount, ...(id ? { id } : {}) } };
  },
  // An idempotency key as x402's payment-identifier: a fifth word, "bad" malformed.
  identify(c) {
    if (!c.id) return { kind: "none" };
    if (c.id === "bad") return { kind: "invalid", reason: "the payment identifier is malformed" };
    return { kind: "identified", id: c.id, payment: `${c.scheme}:${c.key}:${c.amount}` };
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
export const call = (path = "/api/chain/call", client = "10.0.0.1"): PricedCall => ({
  requestId: `req-${++n}`,
  endpoint: endpoint(path),
  network: "ethereum",
  url: `http://x${path}`,
  client,
});
export const pay = (scheme: string, key: string, payer = "0xpayer", amount = "5000", id = ""): Header[] => [
  { name: "X-Test-Pay", value: `${scheme} ${key} ${payer} ${amount}${id ? ` ${id}` : ""}` },
];

export let alpha: TestScheme;
export let beta: TestScheme;
export let events: { reservation: Reservation; outcome: CallOutcome }[];
export let payments: Payments;

/**
 * The in-memory reservation store, unreachable while `down` (as Redis is during an outage), or for
 * the one method named `failing`; while `repliesLost`, each call is applied and then fails (Redis
 * ran the script, the link dropped before its reply).
 */
type OutageStore = MemoryReservationStore & { down: boolean; repliesLost: boolean; failing?: string };
export function outageStore(): OutageStore {
  const store = new MemoryReservationStore() as OutageStore;
  store.down = false;
  store.repliesLost = false;
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function" || prop === "close") return value;
      // A pure function of its arguments (no store call): it stays synchronous.
      if (prop === "keyOf") return value.bind(target);
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
export const REVERTED: Extract<SettleResult, { ok: false }> = {
  ok: false,
  code: "payment_invalid",
  reason: "transfer reverted",
  transaction: "",
  receipt: [],
};

/** A call verified for `key`, whose Settle's begin Redis ran but whose answer was lost (503). */
export async function settledWithLostBegin(key: string) {
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

export function build(
  limits = { perSecond: 1000, burst: 1000 },
  reservations = new MemoryReservationStore(),
) {
  payments = replica(reservations, limits);
}

/** One replica's core over `reservations` (shared by the replicas of a test). */
export function replica(
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
    answers: { store: answerStore, maxBytes: 1_024, ttlMs: 60_000 },
  });
}

/** The first answers of payments carrying an identifier, shared by a test's replicas. */
export let answerStore = new MemoryAnswerStore();

/** Fresh schemes, no recorded events, and a fresh core over a fresh store: each test's start. */
export function resetCore() {
  alpha = new TestScheme("alpha");
  beta = new TestScheme("beta");
  events = [];
  answerStore = new MemoryAnswerStore();
  build();
}
