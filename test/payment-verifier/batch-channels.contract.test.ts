// The x402-batch channel records, written by the official SDK's storage (batch-channels.ts: its
// compare-and-set wrapped with a write mark) and by the voucher store's scripts (batch-vouchers.ts):
// one suite on a single Redis and on a Redis Cluster, where a record, its write marks and every key
// a script uses with it share the channel's slot, and the SDK's listing scans every master.
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { batchChannelStorage } from "../../libs/payment-rails/src/batch-channels.ts";
import type { Redis } from "../../libs/platform/src/redis.ts";
import { BatchVoucherStore } from "../../services/payment-verifier/src/stores/batch-vouchers.ts";
import { testRedis } from "../support/redis.ts";
import { testCluster } from "../support/redis-cluster.ts";

const prefix = `test:batch-channels${randomBytes(4).toString("hex")}`;
const single = testRedis(prefix);
const cluster = testCluster(prefix);

const targets: [string, () => Redis][] = [
  ["a single Redis", () => single],
  ["a Redis Cluster", cluster],
];

const fresh = (id: string) => ({
  channelId: id,
  balance: "1000000",
  totalClaimed: "0",
  withdrawRequestedAt: 0,
  refundNonce: 0,
  chargedCumulativeAmount: "0",
  onchainSyncedAt: Date.now(),
});

describe.each(targets)("x402-batch channel records on %s", (_name, open) => {
  let redis: Redis;
  beforeAll(() => {
    redis = open();
  });

  it("the SDK creates and updates records, the voucher store charges them, and the SDK reads and lists what they hold", async () => {
    const storage = batchChannelStorage(redis, prefix);
    const vouchers = new BatchVoucherStore(redis, prefix);
    const ids = Array.from({ length: 6 }, () => `0x${randomBytes(32).toString("hex")}`);
    for (const id of ids) {
      const created = await storage.updateChannel(id, () => fresh(id) as never);
      expect(created.status).toBe("updated");
    }
    const [id] = ids as [string];
    const now = Date.now();
    expect(
      await vouchers.admit({
        channelId: id,
        cumulative: "1000",
        charged: "0",
        pendingId: "p1",
        requestId: "req-1",
        now,
        expiresAt: now + 60_000,
        freshMs: 60_000,
      }),
    ).toEqual({ kind: "reserved", pendingId: "p1" });
    const committed = await vouchers.commit(
      id,
      "p1",
      "req-1",
      { cumulative: "1000", charged: "0", signature: "0x01" },
      now,
    );
    expect(committed.kind).toBe("committed");
    expect((await storage.get(id))?.chargedCumulativeAmount).toBe("1000");
    // Concurrent updates of one record through the SDK's compare-and-set: each applied once.
    await Promise.all(
      Array.from({ length: 5 }, () =>
        storage.updateChannel(id, (c) =>
          c ? ({ ...c, balance: String(Number(c.balance) + 1) } as never) : undefined,
        ),
      ),
    );
    expect((await storage.get(id))?.balance).toBe("1000005");
    // Listed from every master (a cluster spreads the records), the marks left out.
    const listed = (await storage.list()).map((c) => c.channelId);
    expect(listed.filter((c) => ids.includes(c)).sort()).toEqual([...ids].sort());
  });
});
