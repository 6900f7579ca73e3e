// The x402-batch claimer's parts that decide, driven with plain objects: when channels are claimed
// (only over confirmed balances), which idle channel is refunded, what each money-moving log
// records, and the pass itself (lease, fence, claim, settle, refund) over ports made for this test.
// The claim lease's epoch and fence run on the real Redis (a key of this file's). The claimer on a
// real chain with the official SDK is test/e2e/x402-batch-settlement.test.ts.
import { randomBytes } from "node:crypto";
import { settlementEventV2 } from "@tollgate/events";
import { describe, expect, it } from "vitest";
import { redisLease } from "../../services/settlement-worker/src/adapters/lease.ts";
import { createClaimer } from "../../services/settlement-worker/src/core/x402-batch-claimer.ts";
import {
  type BatchLog,
  batchEvents,
  defaultClaimIntervalSeconds,
  planClaims,
} from "../../services/settlement-worker/src/core/x402-batch-claims.ts";
import { eventually, sleep } from "../support/eventually.ts";
import { testRedis } from "../support/redis.ts";
import {
  chain,
  id,
  NOW,
  payer,
  policy,
  record,
  recorder,
  settings,
  world,
} from "../support/x402-batch-claimer.ts";

const prefix = `test:x402batch:${randomBytes(4).toString("hex")}:`;
const redis = testRedis(prefix);

describe("when x402-batch channels are claimed (planClaims)", () => {
  it("claims every confirmed channel once the unclaimed total reaches the minimum, and not before", () => {
    const channels = [
      record(1, { chargedCumulativeAmount: "6000" }),
      record(2, { chargedCumulativeAmount: "5000", totalClaimed: "1000" }),
    ];
    const onchain = new Map([
      [id(1), chain()],
      [id(2), chain({ totalClaimed: 1_000n })],
    ]);
    const due = planClaims(channels, onchain, policy, NOW, NOW);
    expect(due).toMatchObject({
      claim: [id(1), id(2)],
      reason: "amount",
      unclaimed: 10_000n,
      unconfirmed: [],
    });
    const below = planClaims(channels.slice(0, 1), onchain, policy, NOW, NOW);
    expect(below).toMatchObject({ claim: [], reason: undefined, unclaimed: 6_000n });
    // The interval since the last claim makes anything unclaimed due.
    expect(planClaims(channels.slice(0, 1), onchain, policy, NOW, NOW - 60_000)).toMatchObject({
      claim: [id(1)],
      reason: "interval",
    });
  });

  it("never counts an unconfirmed deposit: a channel charged beyond its on-chain balance waits", () => {
    const channels = [
      // Topped up to 2 USDC in its record; the chain has confirmed 1 USDC so far.
      record(1, { chargedCumulativeAmount: "1500000", balance: "2000000" }),
      record(2, { chargedCumulativeAmount: "20000" }),
      // Opened on this pass: nothing on chain yet.
      record(3, { chargedCumulativeAmount: "1000" }),
    ];
    const onchain = new Map([
      [id(1), chain({ balance: 1_000_000n })],
      [id(2), chain()],
      [id(3), chain({ balance: 0n })],
    ]);
    const plan = planClaims(channels, onchain, policy, NOW, NOW);
    expect(plan).toMatchObject({ claim: [id(2)], reason: "amount", unconfirmed: [id(1), id(3)] });
    expect(plan.unclaimed).toBe(1_521_000n);
  });

  it("claims at once, whatever the amount, when a payer started a timed withdrawal", () => {
    const plan = planClaims(
      [record(1, { chargedCumulativeAmount: "1" })],
      new Map([[id(1), chain({ withdrawing: true })]]),
      policy,
      NOW,
      NOW,
    );
    expect(plan).toMatchObject({ claim: [id(1)], reason: "withdrawal" });
  });

  it("trusts the chain over a record that missed a claim: raises it, and claims only what is left", () => {
    const plan = planClaims(
      [record(1, { chargedCumulativeAmount: "30000", totalClaimed: "0" })],
      new Map([[id(1), chain({ totalClaimed: 30_000n })]]),
      policy,
      NOW,
      NOW - 120_000,
    );
    expect(plan).toMatchObject({
      claim: [],
      unclaimed: 0n,
      behind: [{ channelId: id(1), totalClaimed: 30_000n }],
    });
  });

  it("refunds one idle channel at a time, never a busy one or one whose deposit is unconfirmed", () => {
    const idle = NOW - 3_600_000;
    const channels = [
      record(1, { lastRequestTimestamp: NOW - 10 }), // active
      record(2, { lastRequestTimestamp: idle, pendingRequest: { expiresAt: NOW + 5_000 } }), // busy
      record(3, { lastRequestTimestamp: idle, balance: "2000000" }), // top-up unconfirmed
      record(4, { lastRequestTimestamp: idle, chargedCumulativeAmount: "1000" }),
      record(5, { lastRequestTimestamp: idle }),
    ];
    const onchain = new Map(channels.map((c) => [c.channelId, chain()]));
    expect(planClaims(channels, onchain, policy, NOW, NOW).refund).toBe(id(4));
    expect(planClaims(channels, onchain, { ...policy, idleRefundMs: 0 }, NOW, NOW).refund).toBeUndefined();
    // Nothing left to refund: everything deposited was claimed.
    const spent = [
      record(6, { lastRequestTimestamp: idle, chargedCumulativeAmount: "1000000", totalClaimed: "1000000" }),
    ];
    expect(
      planClaims(spent, new Map([[id(6), chain({ totalClaimed: 1_000_000n })]]), policy, NOW, NOW).refund,
    ).toBeUndefined();
  });

  it("derives the claim interval from the withdraw delay: a quarter, from a minute to an hour", () => {
    expect(defaultClaimIntervalSeconds(900)).toBe(225);
    expect(defaultClaimIntervalSeconds(86_400)).toBe(3_600);
    expect(defaultClaimIntervalSeconds(120)).toBe(60);
  });
});

describe("what an x402-batch transaction records (batchEvents)", () => {
  it("one valid settlement event per money-moving log, its id from the chain (network, transaction, log index)", () => {
    const tx = `0x${"AB".repeat(32)}`;
    const logs: BatchLog[] = [
      {
        kind: "claimed",
        logIndex: 0,
        channelId: id(1).toUpperCase().replace("0X", "0x"),
        amount: 300n,
        totalClaimed: 900n,
      },
      { kind: "refunded", logIndex: 2, channelId: id(1), amount: 100n },
      { kind: "settled", logIndex: 3, receiver: "0xreceiver", amount: 300n },
    ];
    const events = batchEvents(logs, {
      network: "eip155:84532",
      asset: "0xusdc",
      escrow: "0xescrow",
      transaction: tx,
      payers: new Map([[id(1), payer(1)]]),
      reason: "claim: amount",
      time: NOW,
    });
    expect(events.map((e) => [e.id, e.outcome, e.payer, e.amount, e.channel, e.cumulative])).toEqual([
      [`x402-batch:84532:${tx.toLowerCase()}:0`, "claimed", payer(1), "300", id(1), "900"],
      [`x402-batch:84532:${tx.toLowerCase()}:2`, "refunded", payer(1), "100", id(1), null],
      [`x402-batch:84532:${tx.toLowerCase()}:3`, "channel_settled", "0xescrow", "300", null, null],
    ]);
    for (const e of events) expect(settlementEventV2.parse(e)).toEqual(e);
  });
});

describe("one pass of the x402-batch claimer (createClaimer)", () => {
  it("claims the due channels in one batch, then settles, each with its events; a second pass does nothing", async () => {
    const records = [
      record(1, { chargedCumulativeAmount: "7000" }),
      record(2, { chargedCumulativeAmount: "4000" }),
    ];
    const onchain = new Map([
      [id(1), chain()],
      [id(2), chain()],
    ]);
    const w = world(records, onchain);
    const observe = recorder();
    const claimer = createClaimer(w.ports, settings, observe);
    const pass = await claimer.pass();
    expect(w.sent).toEqual(["claim 2", "settle"]);
    expect(pass).toMatchObject({ held: true, reason: "amount", claims: [{ vouchers: 2 }] });
    expect(pass.events.map((e) => [e.outcome, e.amount])).toEqual([
      ["claimed", "7000"],
      ["claimed", "4000"],
      ["channel_settled", "11000"],
    ]);
    expect(w.published).toEqual(pass.events);
    expect(observe.seen).toEqual([
      "lease true",
      "unclaimed 11000 (0 unconfirmed)",
      "claimed 2 amount",
      "settled",
    ]);
    const again = await claimer.pass();
    expect(w.sent).toEqual(["claim 2", "settle"]);
    expect(again.events).toEqual([]);
  });

  it("does nothing without the lease, and stops before a transaction once the lease was taken over", async () => {
    const records = [record(1, { chargedCumulativeAmount: "20000" })];
    const w = world(records, new Map([[id(1), chain()]]));
    const observe = recorder();
    const claimer = createClaimer(w.ports, settings, observe);
    w.lease.held = false;
    expect(await claimer.pass()).toMatchObject({ held: false, claims: [] });
    w.lease.held = true;
    w.lease.fenced = false; // another replica took the lease after this one renewed it
    const pass = await claimer.pass();
    expect(pass.claims).toEqual([]);
    expect(w.sent).toEqual([]);
    expect(observe.seen.at(-1)).toBe("failed claim: the claim lease was taken over");
  });

  it("settles what an earlier holder claimed but never settled (it died in between)", async () => {
    const w = world([], new Map());
    // The earlier holder's claim: on chain, claimed for the receiver, not yet settled.
    w.ports.chain.unsettled = async () => 5_000n;
    const pass = await createClaimer(w.ports, settings, recorder()).pass();
    expect(w.sent).toEqual(["settle"]);
    expect(pass.settle).toMatch(/^0x/);
  });

  it("a claimer that died between its mined claim and the events: the next holder journals each missing event once, from the chain", async () => {
    const records = [
      record(1, { chargedCumulativeAmount: "7000" }),
      record(2, { chargedCumulativeAmount: "4000" }),
    ];
    const w = world(
      records,
      new Map([
        [id(1), chain()],
        [id(2), chain()],
      ]),
    );
    // The receipt is never read: the process died right after the claim was mined.
    const died = {
      ...w.ports,
      chain: { ...w.ports.chain, logs: async () => Promise.reject(new Error("killed")) },
    };
    const first = await createClaimer(died, settings, recorder()).pass();
    // Its claim and settle were mined; no receipt was read, no event journaled.
    expect(w.sent).toEqual(["claim 2", "settle"]);
    expect(first.events).toEqual([]);
    expect(w.published).toEqual([]);
    expect([...w.intents.values()].map((i) => i.operation)).toEqual(["claim", "settle"]);

    const observe = recorder();
    const next = createClaimer(w.ports, { ...settings, intentHorizonMs: 60_000 }, observe);
    const pass = await next.pass();
    expect(w.sent).toEqual(["claim 2", "settle"]); // nothing sent again
    expect(w.published.map((e) => [e.outcome, e.channel, e.amount, e.payer])).toEqual([
      ["claimed", id(1), "7000", payer(1)],
      ["claimed", id(2), "4000", payer(2)],
      ["channel_settled", null, "11000", "0xescrow"],
    ]);
    expect(pass.events).toEqual(w.published);
    // Still open (inside its horizon) but nothing is journaled twice; past it, the intent goes.
    expect((await next.pass()).events).toEqual([]);
    expect(w.intents.size).toBe(2);
    const ids = w.published.map((e) => e.id);
    expect(new Set(ids).size).toBe(3);
    // Another process past the horizon: it may journal them again, under the same ids (the ledger
    // records each id once), and closes the intents.
    const late = createClaimer(w.ports, { ...settings, intentHorizonMs: 0 }, recorder());
    await late.pass();
    expect(w.intents.size).toBe(0);
    expect(new Set(w.published.map((e) => e.id))).toEqual(new Set(ids));
  });

  it("nudged by accruals: a pass runs once the minimum has accrued since the last claim", async () => {
    const records = [record(1, { chargedCumulativeAmount: "10000" })];
    const w = world(records, new Map([[id(1), chain()]]));
    const claimer = createClaimer(w.ports, settings, recorder());
    claimer.accrued(6_000n);
    // time-based: proves no pass runs below the minimum: a moment in which it would have started.
    await sleep(20);
    expect(w.sent).toEqual([]);
    claimer.accrued(4_000n);
    await eventually(
      () => w.sent.length,
      (n) => n >= 2,
      10_000,
      10,
    );
    expect(w.sent).toEqual(["claim 1", "settle"]);
    await claimer.stop();
  });
});

describe("the claim lease (Redis): an epoch per take, a fence checked before acting", () => {
  it("a holder that lapsed and was replaced fails its fence, even after it takes the lease again", async () => {
    const key = `${prefix}lease`;
    const [a, b] = [redisLease(redis, key, 100), redisLease(redis, key, 100)];
    expect(await a.hold()).toBe(true);
    const first = a.epoch();
    expect(await a.fence()).toBe(true);
    expect(await b.hold()).toBe(false);
    expect(await b.fence()).toBe(false);
    // a stalled past its lease: b holds it once a's lapses.
    expect(await eventually(() => b.hold(), true, 10_000, 20)).toBe(true);
    expect(b.epoch()).toBe(first + 1);
    expect(await a.fence()).toBe(false);
    await b.letGo();
    expect(await a.hold()).toBe(true);
    expect(a.epoch()).toBe(first + 2);
    expect(await b.fence()).toBe(false);
    expect(await a.fence()).toBe(true);
  });
});
