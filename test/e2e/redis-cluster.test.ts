// The mesh on a Redis Cluster: `pnpm start` with REDIS_CLUSTER_NODES (a 6-node cluster of this
// file's own on loopback, 3 masters and 3 replicas) and REDIS_URL pointing at a closed port, so a
// service that did not take the cluster would wait for that Redis and the mesh would not start.
// What a user notices: API-key calls metered in the windows, an x402 payment taken and settled,
// and no stand-in anywhere.

import { readFileSync } from "node:fs";
import { freePort, type Mesh, meshAdmin } from "@tollgate/local";
import { connectRedis, createLogger, type Redis, scanEveryMaster } from "@tollgate/platform";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startTestCluster } from "../setup/redis-cluster.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { type DevnetInfo, settlementClient, usdcBalance, x402Payer } from "../support/x402.ts";

const shared = inject("mesh");
const devnet = JSON.parse(readFileSync(shared.devnetFile, "utf8")) as DevnetInfo & {
  accounts: { role: string; privateKey: string }[];
};
const namespace = `cluster${process.pid}`;
let cluster: Awaited<ReturnType<typeof startTestCluster>>;
let redis: Redis;
let mesh: Mesh;
const lines: string[] = [];

beforeAll(async () => {
  cluster = await startTestCluster();
  const logger = createLogger("test");
  logger.level = "silent";
  redis = (await connectRedis({
    url: "",
    clusterNodes: cluster.nodes,
    logger,
    unreachable: "wait",
  })) as Redis;
  mesh = await startOwnMesh({
    stateDir: shared.stateDir,
    namespace,
    env: {
      LOG_LEVEL: "warn",
      REDIS_BUDGET_MS: "2000",
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      REDIS_CLUSTER_NODES: cluster.nodes.join(","),
    },
    serviceEnv: {
      "rpc-proxy": {
        UPSTREAMS_ETHEREUM: devnet.chains.ethereum?.rpcUrl ?? "",
        UPSTREAMS_SEPOLIA: devnet.chains.sepolia?.rpcUrl ?? "",
      },
      "payment-verifier": sharedSettlementEnv("spare4"),
    },
    onLine: (service, line) => lines.push(`[${service}] ${line}`),
  });
});

afterAll(async () => {
  await mesh?.stop();
  redis?.destroy();
  await cluster?.stop();
});

/** The keys of this mesh in the cluster (every master's). */
async function keysOf(match: string): Promise<string[]> {
  const found: string[] = [];
  for await (const keys of scanEveryMaster(redis, { MATCH: `${namespace}:${match}` })) found.push(...keys);
  return found;
}

describe("the mesh on a Redis Cluster (REDIS_CLUSTER_NODES)", () => {
  it("meters API-key calls in the account's windows, kept in the cluster", async () => {
    const admin = meshAdmin(mesh);
    const { secret } = await admin.quickstart("cluster", { daily: 2 });
    admin.close();
    const call = () =>
      request(mesh.gatewayUrl).get("/api/chain/block-number").set("Authorization", `Bearer ${secret}`);
    const first = await call();
    expect(first.status).toBe(200);
    expect(first.headers["x-quota-day-used"]).toBe("1");
    expect((await call()).headers["x-quota-day-used"]).toBe("2");
    const third = await call();
    expect(third.status).toBe(429);
    expect(third.body.error).toBe("daily_limit_exceeded");
    expect((await keysOf("quota:{quota:hot-copy}:d:*")).length).toBeGreaterThan(0);
  });

  it("takes an x402 payment with the official client and settles it once, its record under the payer's tag", async () => {
    const payer = x402Payer(devnet, "payer8");
    const chain = settlementClient(devnet);
    const before = await usdcBalance(chain, devnet, devnet.demo.settlement.payTo);
    const res = await payer.fetch(`${mesh.gatewayUrl}/api/chain/chain-id?network=sepolia`);
    expect(res.status).toBe(200);
    expect(await usdcBalance(chain, devnet, devnet.demo.settlement.payTo)).toBe(before + 1000n);
    expect(await keysOf(`payment:reservation:{payer:${payer.address.toLowerCase()}}*`)).toHaveLength(1);
  });

  it("runs no stand-in and waits for no single Redis", () => {
    expect(lines.filter((l) => /stand-in|in memory|in-memory|Redis is unreachable/i.test(l))).toEqual([]);
  });
});
