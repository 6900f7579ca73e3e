import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import {
  channelRecordKey,
  type RefundOutcome,
  refundKeys,
} from "../../libs/payment-rails/src/batch-refunds.ts";
import { type Redis, slotTags } from "../../libs/platform/src/redis.ts";
import { BatchRefundStore } from "../../services/payment-verifier/src/stores/batch-refunds.ts";
import { BatchVoucherStore } from "../../services/payment-verifier/src/stores/batch-vouchers.ts";
import { redisRefundRequests } from "../../services/settlement-worker/src/adapters/x402-batch-refunds.ts";
import { testRedis } from "../support/redis.ts";
import { testCluster } from "../support/redis-cluster.ts";

// The x402-batch refund requests on the real Redis, both sides of them: payment-verifier's scripts
// (admit, submit, release) and the settlement worker's (take, complete), over the SDK's channel
// record. While a refund holds a channel no voucher is admitted on it; a request is taken once; a
// retried request finds its answer; nothing is taken without a claimer to send it. One refund per
// channel per deposit, whatever amounts are asked; none below the minimum; a payer's refunds bounded
// per hour across replicas (two stores on one Redis). On a single Redis and on a Redis Cluster.

const prefix = `test:refunds${randomBytes(4).toString("hex")}:`;
const channels = `${prefix}channels:`;
const single = testRedis(prefix);
const cluster = testCluster(prefix);
const POLICY = { minimum: "10000", perPayerPerHour: 100 };
// The stores on the Redis the running describe block is about (set by its beforeAll).
let redis: Redis;
let keys: ReturnType<typeof refundKeys>;
let refunds: BatchRefundStore;
let vouchers: BatchVoucherStore;
let worker: ReturnType<typeof redisRefundRequests>;
let record: (id: string) => string;
function on(target: Redis) {
  redis = target;
  keys = refundKeys(prefix, slotTags(target));
  refunds = new BatchRefundStore(target, channels, prefix, POLICY);
  vouchers = new BatchVoucherStore(target, channels);
  worker = redisRefundRequests(target, channels, prefix);
  record = channelRecordKey(channels, slotTags(target));
}

const PAYER = `0x${randomBytes(20).toString("hex")}`;
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
const admit = (
  id: string,
  rid: string,
  cumulative = "30000",
  amount = "",
  store = refunds,
  payer = PAYER,
) => {
  const now = Date.now();
  return store.admit({
    channelId: id,
    payer,
    id: rid,
    cumulative,
    amount,
    requestId: `req-${rid}`,
    now,
    expiresAt: now + 60_000,
  });
};
const lease = () => redis.set(keys.claimLeaseKey, "worker", { PX: 60_000 });
/** The chain's state of a channel before any refund (1 USDC deposited, nothing refunded). */
const FRESH = { balance: 1_000_000n, refundNonce: 0n };

const targets: [string, () => Redis][] = [
  ["a single Redis", () => single],
  ["a Redis Cluster", cluster],
];

describe.each(targets)(
  "x402-batch refund requests (payment-verifier's and the worker's scripts) on %s",
  (_n, open) => {
    beforeAll(() => on(open()));

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
      expect(await worker.take(id, "r1", Date.now(), FRESH, 970_000n)).toEqual({ kind: "gone" });
      expect(await refunds.submit(id, "r1", Date.now(), Date.now() + 600_000)).toBe("submitted");
      expect(await refunds.release(id, "r1")).toBe(false); // submitted: only the worker lets go
      const taken = await worker.take(id, "r1", Date.now(), FRESH, 970_000n);
      expect(taken).toMatchObject({
        kind: "taken",
        record: { chargedCumulativeAmount: "30000", onchainSyncedAt: 0 },
      });
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
      expect(await refunds.outcome(id, "r1")).toEqual(outcome);
      expect(await refunds.submit(id, "r1", Date.now(), Date.now() + 600_000)).toBe("done");
      // The same request after its answer was lost, or any other amount: the first one's outcome.
      expect(await admit(id, "r4")).toEqual({ kind: "refunded", id: "r1" });
      expect(await admit(id, "r5", "30000", "50000")).toEqual({ kind: "refunded", id: "r1" });
    });

    it("refuses a request off the charged total, with nothing unspent, or with no claimer to send it", async () => {
      await lease();
      const id = await channel("30000");
      expect(await admit(id, "a", "29000")).toMatchObject({ kind: "mismatch" });
      const empty = await channel("30000", "30000");
      expect(await admit(empty, "b")).toEqual({ kind: "no_balance" });
      await redis.del(keys.claimLeaseKey);
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
      expect(await worker.take(id, "p2", Date.now(), FRESH, 100_000n)).toMatchObject({ kind: "taken" });
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
      // The same partial refund again, or another amount, or the rest: this deposit's refund answers.
      expect(await admit(id, "p3", "30000", "100000")).toEqual({ kind: "refunded", id: "p2" });
      expect(await admit(id, "p4", "30000", "200000")).toEqual({ kind: "refunded", id: "p2" });
      expect(await admit(id, "p5")).toEqual({ kind: "refunded", id: "p2" });
      // A call in between changes nothing: still this deposit.
      await redis.set(record(id), JSON.stringify({ ...(await read(id)), chargedCumulativeAmount: "31000" }));
      expect(await admit(id, "p6", "31000")).toEqual({ kind: "refunded", id: "p2" });
      // A new deposit (the balance grows): one more refund.
      await redis.set(record(id), JSON.stringify({ ...(await read(id)), balance: "1900000" }));
      expect(await admit(id, "p7", "31000")).toEqual({ kind: "reserved", id: "p7" });
    });

    it("refuses a refund below the minimum (the amount asked, or all that is unspent), sending nothing", async () => {
      await lease();
      const id = await channel("30000");
      expect(await admit(id, "s1", "30000", "9999")).toEqual({
        kind: "too_small",
        balance: "1000000",
        charged: "30000",
      });
      expect(await admit(id, "s2", "30000", "10000")).toEqual({ kind: "reserved", id: "s2" });
      // Unspent 9,999: too small whatever is asked; 10,000: a refund.
      const little = await channel("30000", "39999");
      expect(await admit(little, "s3")).toMatchObject({ kind: "too_small" });
      expect(await admit(little, "s4", "30000", "20000")).toMatchObject({ kind: "too_small" });
      expect((await read(little)).pendingRequest).toBeUndefined();
      const enough = await channel("999999999999999999990000", "1000000000000000000000000");
      expect(await admit(enough, "s5", "999999999999999999990000")).toEqual({ kind: "reserved", id: "s5" });
    });

    it("bounds one payer's refunds per hour across replicas (one bucket in Redis), other payers unaffected", async () => {
      await lease();
      const policy = { minimum: "10000", perPayerPerHour: 2 };
      const a = new BatchRefundStore(redis, channels, prefix, policy);
      const b = new BatchRefundStore(redis, channels, prefix, policy);
      const payer = `0x${randomBytes(20).toString("hex")}`;
      const [c1, c2, c3] = [await channel("30000"), await channel("30000"), await channel("30000")];
      expect(await admit(c1, "q1", "30000", "", a, payer)).toEqual({ kind: "reserved", id: "q1" });
      expect(await admit(c2, "q2", "30000", "", b, payer.toUpperCase().replace("0X", "0x"))).toEqual({
        kind: "reserved",
        id: "q2",
      });
      expect(await admit(c3, "q3", "30000", "", a, payer)).toEqual({ kind: "rate_limited" });
      expect(await admit(c3, "q4", "30000", "", b, payer)).toEqual({ kind: "rate_limited" });
      expect((await read(c3)).pendingRequest).toBeUndefined();
      expect(await admit(c3, "q5", "30000", "", b, PAYER)).toEqual({ kind: "reserved", id: "q5" });
    });

    it("the worker sends no second refund of a deposit: the chain shows the first landed (nonce moved, balance not grown)", async () => {
      await lease();
      const id = await channel("30000");
      expect(await admit(id, "w1", "30000", "100000")).toMatchObject({ kind: "reserved" });
      await refunds.submit(id, "w1", Date.now(), Date.now() + 600_000);
      expect(await worker.take(id, "w1", Date.now(), FRESH, 100_000n)).toMatchObject({ kind: "taken" });
      // Its outcome never written (the worker died after sending); the lock lapses; the record is
      // still the one from before the refund, so payment-verifier admits another request.
      const stale = await read(id);
      await redis.set(
        record(id),
        JSON.stringify({ ...stale, pendingRequest: undefined, refundRequest: undefined }),
      );
      expect(await admit(id, "w2", "30000", "200000")).toMatchObject({ kind: "reserved" });
      await refunds.submit(id, "w2", Date.now(), Date.now() + 600_000);
      // The chain: the first landed (nonce 1, 900,000 left): nothing is sent for the second.
      const landed = { balance: 900_000n, refundNonce: 1n };
      expect(await worker.take(id, "w2", Date.now(), landed, 200_000n)).toMatchObject({
        kind: "refunded",
        mark: { id: "w1", nonce: "0", balance: "900000" },
      });
      // Had the first not landed (nonce 0, balance whole), the second is this deposit's refund.
      expect(await worker.take(id, "w2", Date.now(), FRESH, 200_000n)).toMatchObject({ kind: "taken" });
      // A refused send lets its mark go: the deposit may be refunded again.
      await worker.complete(
        id,
        {
          id: "w2",
          channelId: id,
          cumulative: "30000",
          requested: "200000",
          ok: false,
          errorReason: "x",
          errorMessage: "",
          transaction: "",
        },
        { kind: "unlock" },
        Date.now(),
      );
      expect(await redis.get(keys.mark(id))).toBeNull();
    });
  },
);
