// The fixture Redis Cluster (test/setup/redis-cluster.ts, started once per run) for one test file:
// a client of the services' own connector, connected before its tests, and every key under the
// file's own prefix deleted from every master after them.
import { connectRedis, createLogger, type Redis, scanEveryMaster } from "@tollgate/platform";
import { afterAll, beforeAll, inject } from "vitest";
import { clusterReady } from "../setup/redis-cluster.ts";

/** The fixture cluster's nodes (REDIS_CLUSTER_NODES); ready once a testCluster's beforeAll ran. */
export const clusterNodes = (): string[] => inject("redisClusterNodes");

/** Deletes every key under `prefix`, on every master (keys of many slots: one DEL each). */
async function cleanPrefix(redis: Redis, prefix: string): Promise<void> {
  for await (const keys of scanEveryMaster(redis, { MATCH: `${prefix}*`, COUNT: 1000 }))
    await Promise.all(keys.map((k) => redis.del(k)));
}

/**
 * A cluster client for the file (`redis()` once its beforeAll ran: it waits for the fixture cluster,
 * started in the background, to be ok), its keys under `prefix` cleaned after. Called before a
 * file's other hooks that use `clusterNodes()`.
 */
export function testCluster(prefix: string): () => Redis {
  let redis: Redis | undefined;
  beforeAll(async () => {
    await clusterReady(clusterNodes(), 60_000);
    const logger = createLogger("test");
    logger.level = "silent";
    redis = await connectRedis({ url: "", clusterNodes: clusterNodes(), logger, unreachable: "give-up" });
    if (!redis) throw new Error("the fixture Redis Cluster did not answer");
  });
  afterAll(async () => {
    if (!redis) return;
    await cleanPrefix(redis, prefix);
    await redis.close();
  });
  return () => {
    if (!redis) throw new Error("testCluster: used before its beforeAll");
    return redis;
  };
}
