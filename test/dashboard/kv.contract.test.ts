import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Kv, MemoryKv, openKv } from "../../services/dashboard/src/kv.ts";
import { capturingLogger, cleanRedis } from "../quota-meter/helpers.ts";
import { clusterNodes, testCluster } from "../support/redis-cluster.ts";

// The dashboard's store written twice (Redis, and the in-memory stand-in of `pnpm start` without
// Redis): one contract for both, and the Redis one on a single Redis and on a Redis Cluster.

const prefix = `test:dashkv${randomBytes(4).toString("hex")}:`;
const stores: Array<[string, () => Promise<Kv>]> = [
  ["memory", async () => new MemoryKv()],
  [
    "redis",
    () =>
      openKv({
        url: "redis://127.0.0.1:6379",
        prefix,
        connectTimeoutMs: 1500,
        standIn: false,
        logger: capturingLogger("dashboard").logger,
      }),
  ],
  [
    "redis",
    () =>
      openKv({
        url: "",
        clusterNodes: clusterNodes(),
        prefix,
        connectTimeoutMs: 1500,
        standIn: false,
        logger: capturingLogger("dashboard").logger,
      }),
  ],
];
// The cluster's keys under the prefix, cleaned after the file.
testCluster(prefix);

describe.each(stores)("dashboard store contract: %s", (kind, open) => {
  let kv: Kv;
  beforeAll(async () => {
    kv = await open();
    expect(kv.kind).toBe(kind);
  });
  afterAll(async () => {
    await kv.close();
    await cleanRedis(prefix);
  });

  it("take reads a value once: the second take finds nothing", async () => {
    await kv.set("n:a", "message", 60_000);
    expect(await kv.get("n:a")).toBe("message");
    expect(await kv.take("n:a")).toBe("message");
    expect(await kv.take("n:a")).toBeNull();
  });

  it("a value is gone after its time", async () => {
    await kv.set("n:b", "x", 30);
    // Polled: the expiry is waited for, not slept for.
    await expect.poll(() => kv.get("n:b"), { timeout: 20_000, interval: 20 }).toBeNull();
  });

  it("hit counts within a window that the first hit starts, then starts again", async () => {
    // A window far longer than the hits take, even on a loaded machine (150 ms once could lapse
    // between them), and a short one whose restart is polled for.
    const first = await kv.hit("rate:a", 60_000);
    expect(first.count).toBe(1);
    expect(first.resetMs).toBeGreaterThan(0);
    expect(first.resetMs).toBeLessThanOrEqual(60_000);
    expect((await kv.hit("rate:a", 60_000)).count).toBe(2);
    const third = await kv.hit("rate:a", 60_000);
    expect(third.count).toBe(3);
    expect(third.resetMs).toBeLessThanOrEqual(first.resetMs);
    expect((await kv.hit("rate:other", 60_000)).count).toBe(1);
    expect((await kv.hit("rate:short", 100)).count).toBe(1);
    // Once the short window lapses, a hit starts a new one.
    await expect
      .poll(async () => (await kv.hit("rate:short", 100)).count, { timeout: 20_000, interval: 50 })
      .toBe(1);
  });
});
