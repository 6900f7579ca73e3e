import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { type RefundOutcome, refundKeys } from "../../libs/payment-rails/src/batch-refunds.ts";
import { BatchRefundStore } from "../../services/payment-verifier/src/stores/batch-refunds.ts";
import { BatchVoucherStore } from "../../services/payment-verifier/src/stores/batch-vouchers.ts";
import { redisRefundRequests } from "../../services/settlement-worker/src/adapters/x402-batch-refunds.ts";
import { testRedis } from "../support/redis.ts";

// The x402-batch refund requests on the real Redis, both sides of them: payment-verifier's scripts
// (admit, submit, release) and the settlement worker's (take, complete), over the SDK's channel
// record. While a refund holds a channel no voucher is admitted on it; a request is taken once; a
// retried request finds its answer; nothing is taken without a claimer to send it.

const prefix = `test:refunds${randomBytes(4).toString("hex")}:`;
const channels = `${prefix}channels:`;
const redis = testRedis(prefix);
const keys = refundKeys(prefix);
const refunds = new BatchRefundStore(redis, channels, prefix);
const vouchers = new BatchVoucherStore(redis, channels);
const worker = redisRefundRequests(redis, channels, prefix);
const record = (id: string) => `${channels}:server:channel:${id}`;

async function channel(charged: string, balance = "1000000") {
  const id = `0x${randomBytes(32).toString("hex")}`;
  await redis.set(
    record(id),
    JSON.stringify({
      channelId: id,
      balance,
      totalClaimed: "0",
      withdrawRequestedAt: 0,
      refundNonce: 0,
      chargedCumulativeAmount: charged,
      signedMaxClaimable: charged,
      signature: "0x01",
      onchainSyncedAt: Date.now(),
      lastRequestTimestamp: Date.now(),
    }),
  );
  return id;
}

const read = async (id: string) => JSON.parse((await redis.get(record(id))) ?? "null");
const admit = (id: string, rid: string, cumulative = "30000", amount = "") => {
  const now = Date.now();
  return refunds.admit({
    channelId: id,
    id: rid,
    cumulative,
    amount,
    requestId: `req-${rid}`,
    now,
    expiresAt: now + 60_000,
  });
};
const lease = () => redis.set(keys.claimLease, "worker", { PX: 60_000 });

describe("x402-batch refund requests (payment-verifier's and the worker's scripts)", () => {
  it("holds the channel from the request to the refund: no voucher meanwhile; taken once; a retry finds the answer", async () => {
    await lease();
    const id = await channel("30000");
    expect(await admit(id, "r1")).toEqual({ kind: "reserved", id: "r1" });
    // The same request again (a retried Verify) joins it; another amount finds the channel busy.
    expect(await admit(id, "r2")).toEqual({ kind: "joined", id: "r1" });
    expect(await admit(id, "r3", "30000", "500")).toEqual({ kind: "busy" });
    // A voucher on the channel is refused while the refund holds it.
    const now = Date.now();
    expect(
      await vouchers.admit({
        channelId: id,
        cumulative: "31000",
        charged: "30000",
        pendingId: "g-x",
        requestId: "req-x",
        now,
        expiresAt: now + 60_000,
        freshMs: 60_000,
      }),
    ).toEqual({ kind: "busy" });
    // Not yet submitted: the worker does not take it; Release may let it go.
    expect(await worker.take(id, "r1", Date.now())).toBeUndefined();
    expect(await refunds.submit(id, "r1", Date.now(), Date.now() + 600_000)).toBe("submitted");
    expect(await refunds.release(id, "r1")).toBe(false); // submitted: only the worker lets go
    const taken = await worker.take(id, "r1", Date.now());
    expect(taken).toMatchObject({ chargedCumulativeAmount: "30000", onchainSyncedAt: 0 });
    const outcome: RefundOutcome = {
      id: "r1",
      channelId: id,
      cumulative: "30000",
      requested: "",
      ok: true,
      transaction: "0xabc",
      amount: "970000",
      channelState: {
        channelId: id,
        balance: "30000",
        totalClaimed: "30000",
        withdrawRequestedAt: 0,
        refundNonce: "1",
        chargedCumulativeAmount: "30000",
      },
    };
    await worker.complete(id, outcome, { kind: "delete" }, Date.now());
    expect(await read(id)).toBeNull();
    expect(await refunds.outcome("r1")).toEqual(outcome);
    expect(await refunds.submit(id, "r1", Date.now(), Date.now() + 600_000)).toBe("done");
    // The same request after its answer was lost is answered from the outcome; a partial one is not.
    expect(await admit(id, "r4")).toEqual({ kind: "done", id: "r1" });
    expect(await admit(id, "r5", "30000", "1000")).toEqual({ kind: "unknown" });
  });

  it("refuses a request off the charged total, with nothing unspent, or with no claimer to send it", async () => {
    await lease();
    const id = await channel("30000");
    expect(await admit(id, "a", "29000")).toMatchObject({ kind: "mismatch" });
    const empty = await channel("30000", "30000");
    expect(await admit(empty, "b")).toEqual({ kind: "no_balance" });
    await redis.del(keys.claimLease);
    expect(await admit(id, "c")).toEqual({ kind: "no_claimer" });
    expect((await read(id)).pendingRequest).toBeUndefined();
  });

  it("a request never submitted is let go by Release; a partial refund keeps the channel, let go with its new state", async () => {
    await lease();
    const id = await channel("30000");
    expect(await admit(id, "p1")).toEqual({ kind: "reserved", id: "p1" });
    expect(await refunds.release(id, "p1")).toBe(true);
    expect((await read(id)).refundRequest).toBeUndefined();
    expect(await admit(id, "p2", "30000", "100000")).toEqual({ kind: "reserved", id: "p2" });
    expect(await refunds.submit(id, "p2", Date.now(), Date.now() + 600_000)).toBe("submitted");
    expect(await worker.take(id, "p2", Date.now())).toBeDefined();
    await worker.complete(
      id,
      {
        id: "p2",
        channelId: id,
        cumulative: "30000",
        requested: "100000",
        ok: true,
        transaction: "0xdef",
        amount: "100000",
        channelState: {
          channelId: id,
          balance: "900000",
          totalClaimed: "30000",
          withdrawRequestedAt: 0,
          refundNonce: "1",
          chargedCumulativeAmount: "30000",
        },
      },
      { kind: "update", balance: 900_000n, totalClaimed: 30_000n, refundNonce: 1n },
      Date.now(),
    );
    const after = await read(id);
    expect(after).toMatchObject({ balance: "900000", totalClaimed: "30000", refundNonce: 1 });
    expect(after.pendingRequest).toBeUndefined();
    expect(after.refundRequest).toBeUndefined();
    // The same partial refund again, with no call in between, is the one answered.
    expect(await admit(id, "p3", "30000", "100000")).toEqual({ kind: "done", id: "p2" });
  });
});
