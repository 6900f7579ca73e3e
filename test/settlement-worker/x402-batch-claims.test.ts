// The x402-batch claimer's parts that decide, driven with plain objects: when channels are claimed
// (only over confirmed balances), which idle channel is refunded, what each money-moving log
// records, and the pass itself (lease, fence, claim, settle, refund) over ports made for this test.
// The claim lease's epoch and fence run on the real Redis (a key of this file's). The claimer on a
// real chain with the official SDK is test/e2e/x402-batch-settlement.test.ts.
import { randomBytes } from "node:crypto";
import { settlementEventV2 } from "@tollgate/events";
import { describe, expect, it } from "vitest";
import type { RefundOutcome } from "../../libs/payment-rails/src/batch-refunds.ts";
import { type Lease, redisLease } from "../../services/settlement-worker/src/adapters/lease.ts";
import type { RefundSent } from "../../services/settlement-worker/src/adapters/x402-batch-refunds.ts";
import {
  type ClaimerObserver,
  type ClaimerPorts,
  createClaimer,
  type Intent,
} from "../../services/settlement-worker/src/core/x402-batch-claimer.ts";
import {
  type BatchEvent,
  type BatchLog,
  batchEvents,
  type ChannelRecord,
  type ClaimPolicy,
  defaultClaimIntervalSeconds,
  type OnChainChannel,
  planClaims,
} from "../../services/settlement-worker/src/core/x402-batch-claims.ts";
import { testRedis } from "../support/redis.ts";

const prefix = `test:x402batch:${randomBytes(4).toString("hex")}:`;
const redis = testRedis(prefix);

const NOW = 1_800_000_000_000;
const id = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const payer = (n: number) => `0x${n.toString(16).padStart(40, "a")}`;
const record = (n: number, over: Partial<ChannelRecord> = {}): ChannelRecord => ({
  channelId: id(n),
  channelConfig: { payer: payer(n), token: "0xtoken", receiver: "0xreceiver" },
  chargedCumulativeAmount: "0",
  balance: "1000000",
  totalClaimed: "0",
  lastRequestTimestamp: NOW - 1_000,
  ...over,
});
const chain = (over: Partial<OnChainChannel> = {}): OnChainChannel => ({
  balance: 1_000_000n,
  totalClaimed: 0n,
  withdrawing: false,
  refundNonce: 0n,
  ...over,
});
const policy: ClaimPolicy = { minClaimAmount: 10_000n, claimIntervalMs: 60_000, idleRefundMs: 3_600_000 };

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

/** A lease made for the test: held or not, with a fence that can be lost between the check and the act. */
function fakeLease(): Lease & { held: boolean; fenced: boolean } {
  const lease = {
    held: true,
    fenced: true,
    hold: async () => lease.held,
    epoch: () => (lease.held ? 1 : 0),
    fence: async () => lease.fenced,
    letGo: async () => {},
  };
  return lease;
}

function recorder(): ClaimerObserver & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    leaseHeld: (held) => seen.push(`lease ${held}`),
    unclaimed: (amount, unconfirmed) => seen.push(`unclaimed ${amount} (${unconfirmed} unconfirmed)`),
    claimed: (vouchers, reason) => seen.push(`claimed ${vouchers} ${reason}`),
    settled: () => seen.push("settled"),
    refunded: (reason) => seen.push(`refunded ${reason}`),
    failed: (operation, err) => seen.push(`failed ${operation}: ${(err as Error).message}`),
  };
}

/**
 * A contract and a channel manager made for the test: claims raise the chain's totals; transaction
 * n is mined in block n. Intents live in a map (Redis in the worker), shared by claimers.
 */
function world(records: ChannelRecord[], onchain: Map<string, OnChainChannel>) {
  let unsettled = 0n;
  let txs = 0;
  const sent: string[] = [];
  const logs = new Map<string, BatchLog[]>();
  const lease = fakeLease();
  const published: BatchEvent[] = [];
  const intents = new Map<string, Intent>();
  const outcomes: { outcome: RefundOutcome; after: string }[] = [];
  let refundFails: (() => Promise<RefundSent>) | undefined;
  let ids = 0;
  const ports: ClaimerPorts = {
    channels: {
      list: async () => records,
      raiseClaimed: async (channelId, total) => {
        const r = records.find((c) => c.channelId === channelId);
        if (r) r.totalClaimed = String(total);
      },
    },
    chain: {
      channels: async (ids) =>
        new Map(ids.map((i) => [i.toLowerCase(), onchain.get(i) ?? chain({ balance: 0n })])),
      unsettled: async () => unsettled,
      logs: async (tx) => logs.get(tx) ?? [],
      blockNumber: async () => BigInt(txs),
      logsSince: async (fromBlock, channelIds) => {
        const out = new Map<string, BatchLog[]>();
        for (const [tx, list] of logs) {
          if (BigInt(tx) < fromBlock) continue;
          const ours = list.filter((l) => l.kind === "settled" || channelIds.includes(l.channelId));
          if (ours.length) out.set(tx, ours);
        }
        return out;
      },
    },
    manager: {
      claim: async (ids, confirmed) => {
        const tx = `0x${(++txs).toString(16).padStart(64, "0")}`;
        const out: BatchLog[] = [];
        for (const [i, channelId] of ids.entries()) {
          const r = records.find((c) => c.channelId === channelId) as ChannelRecord;
          const c = onchain.get(channelId) as OnChainChannel;
          const charged = BigInt(r.chargedCumulativeAmount);
          if (charged > (confirmed.get(channelId) ?? 0n)) continue;
          out.push({
            kind: "claimed",
            logIndex: i,
            channelId,
            amount: charged - c.totalClaimed,
            totalClaimed: charged,
          });
          unsettled += charged - c.totalClaimed;
          c.totalClaimed = charged;
          r.totalClaimed = String(charged);
        }
        logs.set(tx, out);
        sent.push(`claim ${out.length}`);
        return [{ vouchers: out.length, transaction: tx }];
      },
      settle: async () => {
        const tx = `0x${(++txs).toString(16).padStart(64, "0")}`;
        logs.set(tx, [{ kind: "settled", logIndex: 0, receiver: "0xreceiver", amount: unsettled }]);
        unsettled = 0n;
        sent.push("settle");
        return { transaction: tx };
      },
      refund: async (channelId) => {
        const tx = `0x${(++txs).toString(16).padStart(64, "0")}`;
        sent.push(`refund ${channelId}`);
        return { transaction: tx };
      },
      // The contract's multicall: the claim of the charged total, then the refund (capped).
      refundRequested: async (r, _state, amount, claim) => {
        if (refundFails) return refundFails();
        const tx = `0x${(++txs).toString(16).padStart(64, "0")}`;
        const c = onchain.get(r.channelId) as OnChainChannel;
        const charged = BigInt(r.chargedCumulativeAmount);
        const out: BatchLog[] = [];
        if (claim && charged > c.totalClaimed) {
          out.push({
            kind: "claimed",
            logIndex: 0,
            channelId: r.channelId,
            amount: charged - c.totalClaimed,
            totalClaimed: charged,
          });
          unsettled += charged - c.totalClaimed;
          c.totalClaimed = charged;
        }
        const available = c.balance - c.totalClaimed;
        let paid = available;
        if (amount < available) paid = amount;
        c.balance -= paid;
        c.refundNonce += 1n;
        out.push({ kind: "refunded", logIndex: out.length, channelId: r.channelId, amount: paid });
        logs.set(tx, out);
        sent.push(`refund ${r.channelId} ${paid}${claim ? " with claim" : ""}`);
        return { success: true, transaction: tx, amount: paid };
      },
    },
    refunds: {
      take: async (channelId, rid) => {
        const r = records.find((c) => c.channelId === channelId);
        if (!r || r.pendingRequest?.pendingId !== rid || !r.refundRequest?.submitted) return undefined;
        return { ...r };
      },
      complete: async (channelId, outcome, after) => {
        outcomes.push({ outcome, after: after.kind });
        const i = records.findIndex((c) => c.channelId === channelId);
        const r = records[i];
        if (!r || r.pendingRequest?.pendingId !== outcome.id || after.kind === "keep") return;
        if (after.kind === "delete") records.splice(i, 1);
        else {
          if (after.kind === "update") r.balance = String(after.balance);
          r.pendingRequest = undefined;
          r.refundRequest = undefined;
        }
      },
    },
    lease,
    intents: {
      open: async (i) => void intents.set(i.id, i),
      close: async (id) => void intents.delete(id),
      list: async () => [...intents.values()],
    },
    publish: (e) => published.push(e),
    now: () => NOW,
    newId: () => `intent-${++ids}`,
  };
  return {
    ports,
    lease,
    sent,
    published,
    intents,
    outcomes,
    failRefunds: (f: () => Promise<RefundSent>) => {
      refundFails = f;
    },
  };
}

const settings = { policy, network: "eip155:84532", asset: "0xusdc", escrow: "0xescrow" };

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
    await new Promise((r) => setTimeout(r, 20));
    expect(w.sent).toEqual([]);
    claimer.accrued(4_000n);
    for (let i = 0; i < 50 && w.sent.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(w.sent).toEqual(["claim 1", "settle"]);
    await claimer.stop();
  });
});

describe("the refunds payers ask for (payment-verifier takes them, the claimer sends them)", () => {
  /** A channel whose payer asked for a refund (submitted: payment-verifier's Settle asked for it). */
  const asked = (n: number, over: Partial<ChannelRecord> = {}, amount = ""): ChannelRecord =>
    record(n, {
      chargedCumulativeAmount: "30000",
      pendingRequest: { pendingId: `refund-${n}`, expiresAt: NOW + 60_000 },
      refundRequest: {
        id: `refund-${n}`,
        requestId: `req-${n}`,
        amount,
        cumulative: "30000",
        at: NOW - 100,
        submitted: true,
      },
      ...over,
    });

  it("claims what was charged and returns exactly the rest in one transaction, before the settle; the record goes", async () => {
    // Channel 2 is due a claim too: it goes in the batch, channel 1 only in its refund.
    const records = [asked(1), record(2, { chargedCumulativeAmount: "20000" })];
    const onchain = new Map([
      [id(1), chain({ balance: 1_000_000n, totalClaimed: 10_000n, refundNonce: 3n })],
      [id(2), chain()],
    ]);
    const w = world(records, onchain);
    const observe = recorder();
    const pass = await createClaimer(w.ports, settings, observe).pass();
    expect(w.sent).toEqual(["claim 1", `refund ${id(1)} 970000 with claim`, "settle"]);
    expect(pass.requested).toEqual([{ channel: id(1), transaction: expect.stringMatching(/^0x/) }]);
    expect(onchain.get(id(1))).toMatchObject({ balance: 30_000n, totalClaimed: 30_000n, refundNonce: 4n });
    const refundEvents = pass.events.filter((e) => e.channel === id(1));
    expect(refundEvents.map((e) => [e.outcome, e.amount, e.request_id, e.payer])).toEqual([
      ["claimed", "20000", "req-1", payer(1)],
      ["refunded", "970000", "req-1", payer(1)],
    ]);
    for (const e of pass.events) expect(settlementEventV2.safeParse(e).success).toBe(true);
    expect(pass.events.at(-1)).toMatchObject({ outcome: "channel_settled", amount: "40000" });
    expect(w.outcomes).toEqual([
      {
        after: "delete",
        outcome: {
          id: "refund-1",
          channelId: id(1),
          cumulative: "30000",
          requested: "",
          ok: true,
          transaction: pass.requested[0]?.transaction,
          amount: "970000",
          channelState: {
            channelId: id(1),
            balance: "30000",
            totalClaimed: "30000",
            withdrawRequestedAt: 0,
            refundNonce: "4",
            chargedCumulativeAmount: "30000",
          },
        },
      },
    ]);
    expect(records.map((r) => r.channelId)).toEqual([id(2)]);
    expect(observe.seen).toContain("refunded requested");
    // Nothing is sent twice.
    await createClaimer(w.ports, settings, recorder()).pass();
    expect(w.sent).toHaveLength(3);
  });

  it("a partial refund returns what was asked and keeps the channel, its lock let go", async () => {
    const records = [asked(1, {}, "100000")];
    const onchain = new Map([[id(1), chain({ balance: 1_000_000n, totalClaimed: 30_000n })]]);
    const w = world(records, onchain);
    await createClaimer(w.ports, settings, recorder()).pass();
    expect(w.sent).toEqual([`refund ${id(1)} 100000`]);
    expect(w.outcomes[0]).toMatchObject({ after: "update", outcome: { ok: true, amount: "100000" } });
    expect(records[0]).toMatchObject({
      balance: "900000",
      pendingRequest: undefined,
      refundRequest: undefined,
    });
  });

  it("sends nothing for a request not submitted, lapsed, on an unconfirmed deposit, or with nothing unspent", async () => {
    const records = [
      asked(1, {
        refundRequest: {
          ...(asked(1).refundRequest as NonNullable<ChannelRecord["refundRequest"]>),
          submitted: false,
        },
      }),
      asked(2, { pendingRequest: { pendingId: "refund-2", expiresAt: NOW - 1 } }),
      asked(3),
      asked(4),
    ];
    const onchain = new Map([
      [id(1), chain()],
      [id(2), chain()],
      [id(3), chain({ balance: 20_000n })], // the deposit that covers the charges is not confirmed
      [id(4), chain({ balance: 30_000n })], // balance == charged: nothing to return
    ]);
    const w = world(records, onchain);
    const pass = await createClaimer(w.ports, settings, recorder()).pass();
    expect(pass.requested).toEqual([]);
    expect(w.sent.filter((x) => x.startsWith("refund"))).toEqual([]);
    // Only the empty channel is answered (and let go); the unconfirmed one waits for a later pass.
    expect(w.outcomes).toEqual([
      {
        after: "unlock",
        outcome: expect.objectContaining({
          id: "refund-4",
          ok: false,
          errorReason: "invalid_batch_settlement_evm_refund_no_balance",
        }),
      },
    ]);
    expect(records.find((r) => r.channelId === id(3))?.refundRequest).toBeDefined();
  });

  it("a refund whose outcome is unknown keeps the channel held and its intent open; a refused one lets go", async () => {
    const records = [asked(1)];
    const w = world(records, new Map([[id(1), chain()]]));
    w.failRefunds(() => Promise.reject(new Error("facilitator unreachable")));
    const observe = recorder();
    await createClaimer(w.ports, settings, observe).pass();
    expect(w.outcomes).toEqual([
      { after: "keep", outcome: expect.objectContaining({ ok: false, unknown: true }) },
    ]);
    expect([...w.intents.values()].map((i) => i.operation)).toEqual(["refund"]);
    expect(records[0]?.pendingRequest?.pendingId).toBe("refund-1");
    expect(observe.seen.at(-1)).toBe("failed refund: facilitator unreachable");

    w.failRefunds(async () => ({
      success: false,
      transaction: "",
      errorReason: "invalid_batch_settlement_evm_refund_simulation_failed",
      errorMessage: "reverted",
    }));
    await createClaimer(w.ports, settings, recorder()).pass();
    expect(w.outcomes.at(-1)).toMatchObject({ after: "unlock", outcome: { ok: false } });
    expect(records[0]?.pendingRequest).toBeUndefined();
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
    await new Promise((r) => setTimeout(r, 150)); // a stalled past its lease
    expect(await b.hold()).toBe(true);
    expect(b.epoch()).toBe(first + 1);
    expect(await a.fence()).toBe(false);
    await b.letGo();
    expect(await a.hold()).toBe(true);
    expect(a.epoch()).toBe(first + 2);
    expect(await b.fence()).toBe(false);
    expect(await a.fence()).toBe(true);
  });
});
