// The MPP session settlement loop's parts that decide: the Redis lease that lets one worker replica
// settle (real Redis, a key of this file's), and the rule of when a channel is due and what its
// settlement records. The loop itself settles real channels in test/e2e/mpp-own-mesh.test.ts.
import { randomBytes } from "node:crypto";
import { parseEvent, SETTLEMENT_V2 } from "@tollgate/events";
import { describe, expect, it } from "vitest";
import { redisLease } from "../../services/settlement-worker/src/adapters/lease.ts";
import {
  channelSettledEvent,
  type StoredChannel,
  settleableVoucher,
  settledForGood,
  settlementDue,
} from "../../services/settlement-worker/src/core/session-settlement.ts";
import { eventually } from "../support/eventually.ts";
import { testRedis } from "../support/redis.ts";

const prefix = `test:sessions:${randomBytes(4).toString("hex")}:`;
const redis = testRedis(prefix);

describe("the session settlement lease (Redis)", () => {
  it("lets one replica hold it, renews it for its holder, and hands it over when let go or lapsed", async () => {
    const key = `${prefix}lease`;
    const [a, b] = [redisLease(redis, key, 60_000), redisLease(redis, key, 60_000)];
    const first = await Promise.all([a.hold(), b.hold()]);
    expect(first.filter(Boolean)).toHaveLength(1);
    const [holder, other] = first[0] ? [a, b] : [b, a];
    expect(await holder.hold()).toBe(true);
    expect(await other.hold()).toBe(false);
    await other.letGo(); // not its lease: nothing happens
    expect(await other.hold()).toBe(false);
    await holder.letGo();
    expect(await other.hold()).toBe(true);

    const lapsing = `${prefix}lapsing`;
    const [c, d] = [redisLease(redis, lapsing, 100), redisLease(redis, lapsing, 100)];
    expect(await c.hold()).toBe(true);
    expect(await d.hold()).toBe(false);
    // c died without renewing: d holds it once c's lease lapses.
    expect(await eventually(() => d.hold(), true, 10_000, 20)).toBe(true);
    expect(await c.hold()).toBe(false);
  });
});

const voucher = (cumulativeAmount: bigint) => ({ cumulativeAmount, signature: `0x${"5e".repeat(65)}` });
/** A channel as mppx stores it: its highest voucher is the one for `highestVoucherAmount`. */
const channel = (over: Partial<StoredChannel> = {}): StoredChannel => ({
  channelId: `0x${"ab".repeat(32)}`,
  payer: "0x00000000000000000000000000000000000000aA",
  token: "0x20C000000000000000000000b9537d11c60E8b50",
  chainId: 4217,
  highestVoucherAmount: 5_000n,
  highestVoucher: voucher(over.highestVoucherAmount ?? 5_000n),
  settledOnChain: 0n,
  spent: 5_000n,
  finalized: false,
  closeRequestedAt: 0n,
  createdAt: new Date(1_000_000).toISOString(),
  ...over,
});

describe("when a session channel is due", () => {
  const schedule = { minAmount: 10_000n, intervalMs: 60_000 };
  const now = 1_000_000 + 30_000;

  it("settles at the minimum amount, past the interval, or at once on the payer's close request; never a closed or settled channel", () => {
    expect(settlementDue(channel(), schedule, now, false)).toBeUndefined();
    expect(
      settlementDue(channel({ highestVoucherAmount: 10_000n, spent: 10_000n }), schedule, now, false),
    ).toBe("amount");
    expect(settlementDue(channel(), schedule, now + 30_000, false)).toBe("age");
    // The interval counts from the last settlement, not the channel's opening.
    const recent = channel({ lastSettlementAt: new Date(now).toISOString(), settledOnChain: 1_000n });
    expect(settlementDue(recent, schedule, now + 30_000, false)).toBeUndefined();
    expect(settlementDue(channel(), schedule, now, true)).toBe("close_requested");
    expect(settlementDue(channel({ settledOnChain: 5_000n }), schedule, now + 60_000, true)).toBeUndefined();
    expect(settlementDue(channel({ finalized: true }), schedule, now + 60_000, true)).toBeUndefined();
    expect(settledForGood(channel({ finalized: true }))).toBe(true);
    expect(settledForGood(null)).toBe(true);
    expect(settledForGood(channel())).toBe(false);
  });

  it("settles no more than was spent: a channel whose highest voucher was accepted without its call's charge (Redis gone between mppx's two store updates) is settled by the voucher within that", () => {
    // Served 10,000 and 20,000; the voucher for 30,000 was accepted, its call's charge never written.
    const ahead = channel({
      highestVoucherAmount: 30_000n,
      spent: 20_000n,
      settleableVoucher: voucher(20_000n),
    });
    expect(settleableVoucher(ahead)).toEqual(voucher(20_000n));
    expect(settlementDue(ahead, schedule, now, false)).toBe("amount");
    // Settled up to what was spent: nothing is due, though the highest voucher is a price above,
    // and its payer leaving changes nothing (the voucher within is exactly what was spent).
    expect(settleableVoucher(ahead, true)).toEqual(voucher(20_000n));
    expect(
      settlementDue({ ...ahead, settledOnChain: 20_000n }, schedule, now + 60_000, true),
    ).toBeUndefined();
    // The first voucher accepted without its charge: nothing was spent, nothing to settle.
    const opened = channel({ highestVoucherAmount: 10_000n, spent: 0n });
    expect(settleableVoucher(opened, true)).toBeUndefined();
    expect(settlementDue(opened, schedule, now + 60_000, true)).toBeUndefined();
    // In step, the highest voucher is the one.
    expect(settleableVoucher(channel())).toEqual(voucher(5_000n));
  });

  it("a payer that signed ahead of its calls and asks the reserve to close is settled by the lowest voucher above what it spent: what its served calls owe is not handed back", async () => {
    // Two prices ahead: spent 50,000, its vouchers 60,000 and 70,000 above, and the last one within
    // what it spent 30,000 (kept from before it skipped).
    const ahead = channel({
      highestVoucherAmount: 70_000n,
      spent: 50_000n,
      settledOnChain: 0n,
      settleableVoucher: voucher(30_000n),
      ceilingVoucher: voucher(60_000n),
    });
    // While it stays, nothing beyond what was spent is settled: 30,000 as the schedule says.
    expect(settleableVoucher(ahead)).toEqual(voucher(30_000n));
    expect(
      settlementDue({ ...ahead, settledOnChain: 30_000n }, schedule, now + 60_000, false),
    ).toBeUndefined();
    // Leaving (closeRequestedAt on chain): the lowest voucher it signed above what it spent.
    expect(settleableVoucher(ahead, true)).toEqual(voucher(60_000n));
    expect(settlementDue({ ...ahead, settledOnChain: 30_000n }, schedule, now, true)).toBe("close_requested");
    // A channel written before the ceiling was kept: its highest.
    expect(settleableVoucher({ ...ahead, ceilingVoucher: undefined }, true)).toEqual(voucher(70_000n));
  });

  it("records each settlement as one channel_settled event, its id from the channel and the transaction", () => {
    const tx = `0x${"cd".repeat(32)}`;
    const event = channelSettledEvent(
      channel(),
      { transaction: tx, delta: 4_000n, settled: 5_000n, reason: "age" },
      now,
    );
    expect(parseEvent(SETTLEMENT_V2, event)).toMatchObject({
      outcome: "channel_settled",
      scheme: "mpp-session",
      amount: "4000",
      cumulative: "5000",
      transaction: tx,
      channel: `0x${"ab".repeat(32)}`,
      payment_network: "eip155:4217",
      request_id: null,
    });
    expect(event.id).toBe(`channel_settled:0x${"ab".repeat(32)}:${tx}`);
    const again = channelSettledEvent(
      channel(),
      { transaction: tx, delta: 4_000n, settled: 5_000n, reason: "age" },
      now + 5,
    );
    expect(again.id).toBe(event.id); // a republished settlement is the same event
  });
});
