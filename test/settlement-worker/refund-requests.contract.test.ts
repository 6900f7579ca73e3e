// The worker's side of the refund requests, written twice: the Lua scripts on Redis
// (adapters/x402-batch-refunds.ts) and the plain-object world the claimer's tests run on
// (test/support/x402-batch-claimer.ts). One suite, both: a request is taken only when submitted and
// still its channel's; a channel is refunded once per deposit (the chain's refund nonce moved past
// the mark and its balance not grown: refused), and a send that moved nothing lets its mark go.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { channelRecordKey, type RefundOutcome } from "../../libs/payment-rails/src/batch-refunds.ts";
import { type Redis, slotTags } from "../../libs/platform/src/redis.ts";
import {
  type RefundRequests,
  redisRefundRequests,
} from "../../services/settlement-worker/src/adapters/x402-batch-refunds.ts";
import type { ChannelRecord } from "../../services/settlement-worker/src/core/x402-batch-claims.ts";
import { testRedis } from "../support/redis.ts";
import { testCluster } from "../support/redis-cluster.ts";
import { NOW, record, world } from "../support/x402-batch-claimer.ts";

interface Subject {
  refunds: RefundRequests;
  put(r: ChannelRecord): Promise<void>;
  get(channelId: string): Promise<ChannelRecord | undefined>;
}

const prefix = `test:refund-contract${randomBytes(4).toString("hex")}:`;
const single = testRedis(prefix);
const cluster = testCluster(prefix);

/** The scripts on `redis`, the SDK's records written and read where they store them. */
function onRedis(redis: Redis): Subject {
  const key = channelRecordKey(`${prefix}channels:`, slotTags(redis));
  return {
    refunds: redisRefundRequests(redis, `${prefix}channels:`, prefix),
    put: async (r) => void (await redis.set(key(r.channelId), JSON.stringify(r))),
    get: async (id) => JSON.parse((await redis.get(key(id))) ?? "null") ?? undefined,
  };
}

const subjects: [string, () => Subject][] = [
  ["Redis scripts", () => onRedis(single)],
  ["Redis Cluster scripts", () => onRedis(cluster())],
  [
    "plain objects",
    () => {
      const records: ChannelRecord[] = [];
      const w = world(records, new Map());
      return {
        refunds: w.ports.refunds,
        put: async (r) => {
          const i = records.findIndex((c) => c.channelId === r.channelId);
          if (i >= 0) records.splice(i, 1);
          records.push(r);
        },
        get: async (id) => records.find((c) => c.channelId === id),
      };
    },
  ],
];

let n = 0;
/** A channel (30,000 charged) whose payer's request `rid` is held; submitted unless said. */
function asking(channelId: string, rid: string, submitted = true): ChannelRecord {
  return record(++n, {
    channelId,
    chargedCumulativeAmount: "30000",
    pendingRequest: { pendingId: rid, expiresAt: Date.now() + 60_000 },
    refundRequest: { id: rid, requestId: `req-${rid}`, amount: "", cumulative: "30000", at: NOW, submitted },
  });
}
const refused = (channelId: string, rid: string): RefundOutcome => ({
  id: rid,
  channelId,
  cumulative: "30000",
  requested: "",
  ok: false,
  errorReason: "invalid_batch_settlement_evm_refund_transaction_failed",
  errorMessage: "reverted",
  transaction: "",
});
const newChannel = () => `0x${randomBytes(32).toString("hex")}`;
const FRESH = { balance: 1_000_000n, refundNonce: 0n };

describe.each(subjects)("refund requests, the worker's side (%s)", (_name, make) => {
  it("takes only a submitted request that still holds its channel", async () => {
    const s = make();
    const ch = newChannel();
    await s.put(asking(ch, "a", false));
    expect(await s.refunds.take(ch, "a", Date.now(), FRESH, 100_000n)).toEqual({ kind: "gone" });
    await s.put(asking(ch, "a"));
    expect(await s.refunds.take(ch, "b", Date.now(), FRESH, 100_000n)).toEqual({ kind: "gone" });
    expect(await s.refunds.take(ch, "a", Date.now(), FRESH, 100_000n)).toMatchObject({
      kind: "taken",
      record: { channelId: ch, chargedCumulativeAmount: "30000" },
    });
  });

  it("once per deposit: a second request is refused while the first landed and no deposit came", async () => {
    const s = make();
    const ch = newChannel();
    await s.put(asking(ch, "r1"));
    expect(await s.refunds.take(ch, "r1", Date.now(), FRESH, 100_000n)).toMatchObject({ kind: "taken" });
    // Its answer lost: the record is as before and another request holds the channel.
    await s.put(asking(ch, "r2"));
    const landed = { balance: 900_000n, refundNonce: 1n };
    expect(await s.refunds.take(ch, "r2", Date.now(), landed, 200_000n)).toEqual({
      kind: "refunded",
      mark: { id: "r1", nonce: "0", balance: "900000", amount: "100000" },
    });
    // Not landed (the nonce still the mark's): this is the deposit's refund.
    expect(await s.refunds.take(ch, "r2", Date.now(), FRESH, 200_000n)).toMatchObject({ kind: "taken" });
    // A deposit since the first landed (balance above the mark's): one more.
    const ch2 = newChannel();
    await s.put(asking(ch2, "d1"));
    await s.refunds.take(ch2, "d1", Date.now(), FRESH, 100_000n);
    await s.put(asking(ch2, "d2"));
    const deposited = { balance: 1_900_000n, refundNonce: 1n };
    expect(await s.refunds.take(ch2, "d2", Date.now(), deposited, 100_000n)).toMatchObject({ kind: "taken" });
  });

  it("the same request taken again after its own send landed (its outcome was unknown): refunded, not sent again", async () => {
    const s = make();
    const ch = newChannel();
    await s.put(asking(ch, "u1"));
    await s.refunds.take(ch, "u1", Date.now(), FRESH, 100_000n);
    expect(await s.refunds.take(ch, "u1", Date.now(), FRESH, 100_000n)).toMatchObject({ kind: "taken" });
    expect(
      await s.refunds.take(ch, "u1", Date.now(), { balance: 900_000n, refundNonce: 1n }, 870_000n),
    ).toEqual({
      kind: "refunded",
      mark: { id: "u1", nonce: "0", balance: "900000", amount: "100000" },
    });
  });

  it("a send that moved nothing lets the lock and the mark go: the deposit may be refunded", async () => {
    const s = make();
    const ch = newChannel();
    await s.put(asking(ch, "f1"));
    await s.refunds.take(ch, "f1", Date.now(), FRESH, 100_000n);
    await s.refunds.complete(ch, refused(ch, "f1"), { kind: "unlock" }, Date.now());
    const after = await s.get(ch);
    expect(after?.pendingRequest).toBeUndefined();
    expect(after?.refundRequest).toBeUndefined();
    await s.put(asking(ch, "f2"));
    // Even with the chain's nonce moved (another refund, not this mark's), nothing is marked.
    expect(
      await s.refunds.take(ch, "f2", Date.now(), { balance: 900_000n, refundNonce: 1n }, 1n),
    ).toMatchObject({
      kind: "taken",
    });
  });
});
