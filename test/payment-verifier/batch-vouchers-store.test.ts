import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { batchChannelStorage } from "../../libs/payment-rails/src/batch-channels.ts";
import { BatchVoucherStore } from "../../services/payment-verifier/src/stores/batch-vouchers.ts";
import { until } from "../support/eventually.ts";
import { redisViaProxy, testRedis } from "../support/redis.ts";

// The x402-batch voucher scripts on the real Redis: a charge whose answer was lost is run again once
// Redis answers (the call served with it); one that stays unanswered (the call was answered 503) is
// taken back only while it is the channel's last charge and nothing is pending.

const prefix = `test:vouchers${randomBytes(4).toString("hex")}`;
const redis = testRedis(prefix);
const price = "1000";

async function channel(charged: string) {
  const id = `0x${randomBytes(32).toString("hex")}`;
  const now = Date.now();
  await redis.set(
    `${prefix}:server:channel:${id}`,
    JSON.stringify({
      channelId: id,
      balance: "1000000",
      totalClaimed: "0",
      withdrawRequestedAt: 0,
      refundNonce: 0,
      chargedCumulativeAmount: charged,
      onchainSyncedAt: now,
    }),
  );
  return id;
}

async function admitAndCommit(store: BatchVoucherStore, id: string, charged: string, pendingId: string) {
  const cumulative = (BigInt(charged) + BigInt(price)).toString();
  const now = Date.now();
  const admitted = await store.admit({
    channelId: id,
    cumulative,
    charged,
    pendingId,
    requestId: `req-${pendingId}`,
    now,
    expiresAt: now + 60_000,
    freshMs: 60_000,
  });
  expect(admitted).toEqual({ kind: "reserved", pendingId });
  const committed = await store.commit(
    id,
    pendingId,
    `req-${pendingId}`,
    { cumulative, charged, signature: "0x01" },
    now,
  );
  expect(committed.kind).toBe("committed");
  return cumulative;
}

const chargedOf = async (id: string) =>
  (
    JSON.parse((await redis.get(`${prefix}:server:channel:${id}`)) ?? "{}") as {
      chargedCumulativeAmount: string;
    }
  ).chargedCumulativeAmount;

describe("x402-batch voucher store: taking back a charge whose answer was lost", () => {
  it("takes back the channel's last charge once; the payer's next voucher continues from before it", async () => {
    const store = new BatchVoucherStore(redis, prefix);
    const id = await channel("5000");
    const cumulative = await admitAndCommit(store, id, "5000", "g-a");
    expect(await chargedOf(id)).toBe("6000");
    expect(await store.uncommit(id, "g-a", { cumulative, charged: "5000" })).toBe(true);
    expect(await chargedOf(id)).toBe("5000");
    expect(await store.uncommit(id, "g-a", { cumulative, charged: "5000" })).toBe(false);
    // The same amount signed again buys the next call.
    await admitAndCommit(store, id, "5000", "g-b");
    expect(await chargedOf(id)).toBe("6000");
  });

  it("leaves a charge another call has followed or is pending on, and another call's charge", async () => {
    const store = new BatchVoucherStore(redis, prefix);
    const id = await channel("0");
    const first = await admitAndCommit(store, id, "0", "g-1");
    await admitAndCommit(store, id, first, "g-2");
    expect(await store.uncommit(id, "g-1", { cumulative: first, charged: "0" })).toBe(false);
    expect(await chargedOf(id)).toBe("2000");

    const pending = await channel("0");
    const only = await admitAndCommit(store, pending, "0", "g-3");
    const now = Date.now();
    await store.admit({
      channelId: pending,
      cumulative: "2000",
      charged: only,
      pendingId: "g-4",
      requestId: "req-g-4",
      now,
      expiresAt: now + 60_000,
      freshMs: 60_000,
    });
    expect(await store.uncommit(pending, "g-3", { cumulative: only, charged: "0" })).toBe(false);
    expect(await store.uncommit(pending, "g-other", { cumulative: only, charged: "0" })).toBe(false);
    expect(await chargedOf(pending)).toBe("1000");
  });
});

describe("x402-batch voucher store: a charge whose answer was lost (replies held, then the link cut by a TCP proxy in front of the machine's Redis)", () => {
  it("is run again once Redis answers: answered as charged (the call served), the channel charged once", async () => {
    const store = new BatchVoucherStore(redis, prefix);
    // The scripts loaded in Redis first (a NOSCRIPT reply held would stop the test's commit short).
    await admitAndCommit(store, await channel("0"), "0", "g-load");
    const { proxy, viaProxy, close } = await redisViaProxy();
    try {
      const id = await channel("5000");
      const now = Date.now();
      const voucher = { cumulative: "6000", charged: "5000", signature: "0x01" };
      await store.admit({
        channelId: id,
        cumulative: voucher.cumulative,
        charged: voucher.charged,
        pendingId: "g-lost",
        requestId: "req-g-lost",
        now,
        expiresAt: now + 60_000,
        freshMs: 60_000,
      });
      proxy.holdReplies();
      const committed = new BatchVoucherStore(viaProxy, prefix).commit(
        id,
        "g-lost",
        "req-g-lost",
        voucher,
        now,
      );
      await until("Redis ran the commit", async () => (await chargedOf(id)) === "6000", 10_000, 10);
      await proxy.cut();
      // time-based: the link stays cut a while: the outage the lost reply lives through.
      setTimeout(() => void proxy.restore(), 300);
      expect((await committed).kind).toBe("already");
      expect(await chargedOf(id)).toBe("6000");
    } finally {
      await close();
    }
  });
});

describe("x402-batch channel records through the official SDK's storage, an update whose answer was lost (replies held, or every byte stalled, then the link cut by a TCP proxy in front of the machine's Redis)", () => {
  type Record = { chargedCumulativeAmount: string };
  /** The SDK's charge of one more call; `meanwhile` runs once, between its read and its write. */
  const charge = (meanwhile: () => void) => {
    let once = true;
    return (current: Record | undefined) => {
      if (once) meanwhile();
      once = false;
      struck = true;
      return {
        ...(current as Record),
        chargedCumulativeAmount: String(Number(current?.chargedCumulativeAmount) + 1000),
      };
    };
  };

  /** Set once the charge's update function ran (the fault struck, its compare-and-set about to go). */
  let struck = false;
  /**
   * Waits until the fault struck and the compare-and-set is held at the proxy: its bytes (stalled),
   * or Redis' reply to it (replies held).
   */
  const afterFault = async (proxy: { held: number }) => {
    await until("the SDK ran its update", () => struck, 10_000, 10);
    await until("the compare-and-set (or its reply) is held at the proxy", () => proxy.held > 0, 10_000, 10);
  };

  /** The SDK's charge of one more call on a channel at 5,000, through the proxy, `fault` struck between its read and its write. */
  async function chargeThrough(fault: "holdReplies" | "stall") {
    const { proxy, viaProxy, close } = await redisViaProxy();
    try {
      const id = await channel("5000");
      struck = false;
      const updated = batchChannelStorage(viaProxy, prefix)
        .updateChannel(id, charge(() => proxy[fault]()) as never)
        .then(
          (u) => u.status,
          () => "failed",
        );
      await afterFault(proxy);
      await proxy.cut();
      // time-based: the link stays cut a while: the outage the lost reply lives through.
      setTimeout(() => void proxy.restore(), 300);
      return { status: await updated, charged: await chargedOf(id) };
    } finally {
      await close();
    }
  }

  it("Redis ran it: read back as landed, not failed; the channel charged once", async () => {
    expect(await chargeThrough("holdReplies")).toEqual({ status: "updated", charged: "6000" });
  });

  it("the link dropped before Redis ran it: the update is fenced off by its mark and the SDK's update runs again, charged once", async () => {
    expect(await chargeThrough("stall")).toEqual({ status: "updated", charged: "6000" });
  });

  /**
   * The SDK's charge through the proxy with every byte stalled then the link cut (Redis never ran
   * it), on a channel at `charged` (none: the update creates the record). `afterReadBack` runs once,
   * right after the read-back fenced it off, with the first update as sent (to deliver it late).
   */
  async function lateDelivery(
    charged: string | undefined,
    afterReadBack: (first: Parameters<typeof redis.eval>) => Promise<void>,
  ) {
    const { proxy, viaProxy, close } = await redisViaProxy();
    try {
      const id = charged === undefined ? `0x${randomBytes(32).toString("hex")}` : await channel(charged);
      const sent: Parameters<typeof viaProxy.eval>[] = [];
      let replayed = false;
      const recording = Object.create(viaProxy, {
        eval: {
          value: async (...args: Parameters<typeof viaProxy.eval>) => {
            sent.push(args);
            const reply = await viaProxy.eval(...args);
            const [, options] = args as unknown as [string, { keys: string[]; arguments: string[] }];
            // The read-back (one key, the write's mark; no arguments): the first update is fenced.
            if (options.arguments.length === 0 && !replayed) {
              replayed = true;
              await afterReadBack(sent[0] as Parameters<typeof redis.eval>);
            }
            return reply;
          },
        },
      }) as typeof viaProxy;
      struck = false;
      const create = (current: Record | undefined) => {
        if (!struck) proxy.stall();
        struck = true;
        return current
          ? { ...current, chargedCumulativeAmount: String(Number(current.chargedCumulativeAmount) + 1000) }
          : {
              channelId: id,
              balance: "1000000",
              totalClaimed: "0",
              withdrawRequestedAt: 0,
              refundNonce: 0,
              chargedCumulativeAmount: "1000",
              onchainSyncedAt: 0,
            };
      };
      const updated = batchChannelStorage(recording, prefix).updateChannel(id, create as never);
      await afterFault(proxy);
      await proxy.cut();
      // time-based: the link stays cut a while: the outage the lost reply lives through.
      setTimeout(() => void proxy.restore(), 300);
      return { status: (await updated).status, replayed, id };
    } finally {
      await close();
    }
  }

  it("a late delivery of an update taken as not landed does nothing, though the record still holds the very bytes it expected: its mark fences it off", async () => {
    let late: unknown;
    const { status, replayed, id } = await lateDelivery("5000", async (first) => {
      late = await redis.eval(...first);
    });
    expect(replayed).toBe(true);
    expect(status).toBe("updated");
    // The late first update did nothing; the SDK's retry charged once.
    expect(late).toEqual([0, expect.any(String)]);
    expect(await chargedOf(id)).toBe("6000");
  });

  it("an update that creates the record, not landed: fenced off too, and the SDK's update runs again (was a 503)", async () => {
    let late: unknown;
    const { status, replayed, id } = await lateDelivery(undefined, async (first) => {
      late = await redis.eval(...first);
    });
    expect(replayed).toBe(true);
    expect(status).toBe("updated");
    expect(late).toEqual([0, null]);
    expect(await chargedOf(id)).toBe("1000");
  });
});
