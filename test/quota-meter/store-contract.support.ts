// The contract suites' two stores (the Redis scripts and their in-memory twin) and what their tests
// share: an account with a key made through the store, and an Authorize query.
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll } from "vitest";
import { MemoryStore } from "../../services/quota-meter/src/store/memory-store.ts";
import { openRedisStore, type RedisStore } from "../../services/quota-meter/src/store/redis-store.ts";
import type { AccountRecord, QuotaStore } from "../../services/quota-meter/src/store/types.ts";
import { windowsAt } from "../../services/quota-meter/src/windows.ts";
import { clusterNodes, testCluster } from "../support/redis-cluster.ts";
import { cleanRedis, REDIS_PORT, silentLogger, uniqueId } from "./helpers.ts";

/**
 * Opens a Redis store under a prefix of this file's own (cleaned after) on the machine's Redis and
 * one on the fixture Redis Cluster, beside a fresh memory twin.
 */
export function contractStores(label: string) {
  const prefix = `test:${uniqueId(label)}:`;
  let redisStore: RedisStore;
  let clusterStore: RedisStore;
  testCluster(prefix);
  beforeAll(async () => {
    const open = (where: { url: string; clusterNodes?: string[] }) =>
      openRedisStore({ ...where, prefix, logger: silentLogger(), connectTimeoutMs: 2_000, giveUp: true });
    const [single, cluster] = await Promise.all([
      open({ url: `redis://127.0.0.1:${REDIS_PORT}` }),
      open({ url: "", clusterNodes: clusterNodes() }),
    ]);
    if (!single) throw new Error("the contract suite needs the Redis server on 127.0.0.1:6379");
    if (!cluster) throw new Error("the contract suite needs the fixture Redis Cluster");
    redisStore = single;
    clusterStore = cluster;
  });
  afterAll(async () => {
    await redisStore?.close();
    await clusterStore?.close();
    await cleanRedis(prefix);
  });
  const stores: [string, () => QuotaStore][] = [
    ["redis (Lua scripts)", () => redisStore],
    ["redis cluster (Lua scripts)", () => clusterStore],
    ["memory (the stand-in)", () => new MemoryStore()],
  ];
  return { prefix, stores, redisStore: () => redisStore };
}

/** An account with the plan and one live key, created through the store itself. */
export async function newAccount(store: QuotaStore, plan: Partial<AccountRecord> = {}) {
  const id = randomUUID();
  const record: AccountRecord = {
    id,
    name: id,
    status: "active",
    dailyLimit: 0,
    monthlyLimit: 0,
    burstPerSecond: 1_000_000,
    plan: "standard",
    createdAt: new Date().toISOString(),
    ...plan,
  };
  await store.createAccount(record);
  const keyHash = randomBytes(32);
  const keyId = randomUUID();
  await store.createKey(
    {
      id: keyId,
      accountId: id,
      prefix: "tg_live_x",
      createdAt: new Date().toISOString(),
      revokedAt: "",
      lastUsedAt: "",
    },
    keyHash,
  );
  return { accountId: id, keyId, keyHash, account: record };
}

/** An Authorize query at `nowMs` (its windows), for a key or, with `wallet`, a signed-in wallet. */
export const authorizeAt = (
  nowMs: number,
  keyHash: Buffer,
  defaultBurst = 50,
  units = 1,
  authorizationId = "",
  priceAtomic = 0,
  wallet = "",
  creditLeaseSettleAt = nowMs + 60_000,
  calls = 1,
) => ({
  keyHash,
  nowMs,
  windows: windowsAt(nowMs),
  defaultBurst,
  units,
  authorizationId,
  priceAtomic,
  wallet,
  creditLeaseSettleAt,
  calls,
});
