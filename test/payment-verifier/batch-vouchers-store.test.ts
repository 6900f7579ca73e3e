import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { BatchVoucherStore } from "../../services/payment-verifier/src/stores/batch-vouchers.ts";
import { testRedis } from "../support/redis.ts";

// The x402-batch voucher scripts on the real Redis: a charge whose answer was lost (the call was
// answered 503) is taken back only while it is the channel's last charge and nothing is pending.

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
