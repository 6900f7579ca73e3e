// REDIS_CLUSTER_NODES through the platform's one connector: the fixture Redis Cluster (6 nodes on
// loopback, test/setup/redis-cluster.ts) reached by the same client every service uses.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../libs/platform/src/logger.ts";
import {
  clusterNodesOf,
  connectRedis,
  isCluster,
  onEveryMaster,
  type Redis,
  scanEveryMaster,
  slotTag,
} from "../../libs/platform/src/redis.ts";
import { testCluster } from "../support/redis-cluster.ts";

const prefix = `test:platform-cluster${randomBytes(4).toString("hex")}:`;
const cluster = testCluster(prefix);

describe("REDIS_CLUSTER_NODES", () => {
  it("takes host:port entries, comma-separated, and refuses anything else naming the variable", () => {
    expect(clusterNodesOf(" 10.0.0.1:7000, redis-1.internal:7001,[::1]:7002 ,")).toEqual([
      "10.0.0.1:7000",
      "redis-1.internal:7001",
      "[::1]:7002",
    ]);
    expect(clusterNodesOf("")).toEqual([]);
    expect(() => clusterNodesOf("redis://10.0.0.1:7000")).toThrow(/REDIS_CLUSTER_NODES/);
    expect(() => clusterNodesOf("10.0.0.1")).toThrow(/REDIS_CLUSTER_NODES/);
  });

  it("connects one client that spreads keys over the three masters, finds them all, and runs a script on keys of one tag", async () => {
    const redis: Redis = cluster();
    expect(isCluster(redis)).toBe(true);
    const keys = Array.from({ length: 60 }, (_, i) => `${prefix}k${i}`);
    await Promise.all(keys.map((k) => redis.set(k, "1", { PX: 60_000 })));
    const perMaster = await onEveryMaster(redis, async (node) => {
      let n = 0;
      for await (const batch of node.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) n += batch.length;
      return n;
    });
    expect(perMaster).toHaveLength(3);
    expect(perMaster.every((n) => n > 0)).toBe(true);
    const found: string[] = [];
    for await (const batch of scanEveryMaster(redis, { MATCH: `${prefix}*`, COUNT: 1000 }))
      found.push(...batch);
    expect(found.sort()).toEqual([...keys].sort());
    // Two keys of one entity under its tag: one slot, so one script may use both.
    const tag = slotTag("account", "a-1");
    const moved = await redis.eval(
      "redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000); return redis.call('INCRBY', KEYS[2], ARGV[1])",
      { keys: [`${prefix}${tag}x`, `${prefix}${tag}y`], arguments: ["5"] },
    );
    expect(moved).toBe(5);
    await expect(
      redis.eval("return 1", { keys: [`${prefix}{a}x`, `${prefix}{b}y`], arguments: [] }),
    ).rejects.toThrow(/CROSSSLOT/);
  });

  it("no node answering at start-up: a service with the stand-in allowed is told at once, not after retries", async () => {
    const logger = createLogger("test");
    logger.level = "silent";
    const started = performance.now();
    // Port 1 on loopback: nothing listens (refused at once).
    const client = await connectRedis({
      url: "",
      clusterNodes: ["127.0.0.1:1"],
      logger,
      connectTimeoutMs: 1_000,
      unreachable: "give-up",
    });
    expect(client).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(1_500);
  });
});
