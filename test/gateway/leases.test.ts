// Quota leases across two gateway replicas in front of one quota-meter (a mesh of its own): the
// windows stay exact (1,000 concurrent calls with 100 left serve exactly 100, whichever gateway
// they reach), X-Quota-*-Used numbers every served call once, a hot key stops costing a
// quota-meter hop per call, and what a lease did not use goes back.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { type Mesh, meshAdmin } from "@tollgate/local";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { eventually } from "../support/eventually.ts";
import { quotaMeterCalls } from "../support/gateway.ts";
import { startOwnMesh } from "../support/own-mesh.ts";

const devnet = JSON.parse(readFileSync(inject("mesh").devnetFile, "utf8"));
let mesh: Mesh;
let second: string;
/** sepolia's node in this mesh: accepts connections and closes them (every sepolia call fails, not charged). */
let deadNode: Server;

beforeAll(async () => {
  deadNode = createServer((socket) => socket.destroy());
  await new Promise<void>((r) => deadNode.listen(0, "127.0.0.1", r));
  const deadPort = (deadNode.address() as { port: number }).port;
  mesh = await startOwnMesh({
    stateDir: inject("mesh").stateDir,
    namespace: `leases${process.pid}`,
    env: {
      LOG_LEVEL: "warn",
      REDIS_BUDGET_MS: "2000",
      UPSTREAMS_ETHEREUM: devnet.chains.ethereum.rpcUrl,
      UPSTREAMS_SEPOLIA: `http://127.0.0.1:${deadPort}`,
    },
    serviceEnv: {
      "payment-verifier": {
        ...sharedSettlementEnv("spare2"),
      },
    },
  });
  second = (await mesh.spawnGateway()).url;
});

afterAll(async () => {
  await mesh?.stop();
  deadNode?.close();
});

async function account(plan: { daily?: number; monthly?: number; burst?: number }) {
  const admin = meshAdmin(mesh);
  try {
    return (await admin.quickstart(`lease-${Math.random()}`, plan)).secret;
  } finally {
    admin.close();
  }
}

const call = (base: string, key: string) =>
  fetch(`${base}/api/chain/chain-id`, { headers: { authorization: `Bearer ${key}` } });

describe("quota leases across two gateways", () => {
  it("serves exactly 100 of 1,000 concurrent calls with 100 left, spread over both gateways, each numbered once", async () => {
    const key = await account({ daily: 100, monthly: 0, burst: 1_000_000 });
    const answers = await Promise.all(
      Array.from({ length: 1_000 }, async (_, i) => {
        const res = await call(i % 2 ? second : mesh.gatewayUrl, key);
        await res.arrayBuffer();
        return { status: res.status, used: res.headers.get("x-quota-day-used"), gateway: i % 2 };
      }),
    );
    const served = answers.filter((a) => a.status === 200);
    expect(served).toHaveLength(100);
    expect(answers.filter((a) => a.status !== 200).every((a) => a.status === 429)).toBe(true);
    // Every served call has its own number, 1..100, whichever gateway served it.
    expect(served.map((a) => Number(a.used)).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
    expect(new Set(served.map((a) => a.gateway))).toEqual(new Set([0, 1]));
  });

  it("serves a hot key from leases: far fewer quota-meter hops than calls, and the windows count each call once", async () => {
    const key = await account({ daily: 0, monthly: 0, burst: 1_000_000 });
    const before = await quotaMeterCalls(mesh);
    for (let round = 0; round < 10; round++) {
      const batch = await Promise.all(Array.from({ length: 20 }, () => call(mesh.gatewayUrl, key)));
      for (const res of batch) {
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
    }
    const hops = (await quotaMeterCalls(mesh)) - before;
    expect(hops).toBeLessThan(40); // 200 calls
    console.log(`200 calls, ${hops} Authorize calls`);
  });

  it("gives unused units back when a lease ends, so the windows show only what was served", async () => {
    const key = await account({ daily: 1_000, monthly: 0, burst: 1_000_000 });
    // Warm the key until its lease is larger than what the next calls use.
    for (let i = 0; i < 6; i++) {
      const batch = await Promise.all(Array.from({ length: 16 }, () => call(mesh.gatewayUrl, key)));
      for (const res of batch) await res.arrayBuffer();
    }
    const served = 96;
    // Once the lease has ended (1 s) and the gateway has reported it, a call on the OTHER gateway
    // (no lease of its own, each of its calls asks quota-meter) sees the windows: exactly what was
    // served, plus its own calls. Polled until then: the return's timing is the machine's.
    let asked = 0;
    const seen = async () => {
      const res = await call(second, key);
      expect(res.status).toBe(200);
      asked++;
      return Number(res.headers.get("x-quota-day-used")) - asked;
    };
    await expect.poll(seen, { timeout: 30_000, interval: 250 }).toBe(served);
  });

  it("a failed call's unit given back to its lease is counted once in the usage rollups (the windows after a Redis loss are rebuilt from them)", async () => {
    const admin = meshAdmin(mesh);
    const created = await admin.quickstart(`lease-${Math.random()}`, {
      daily: 1_000,
      monthly: 0,
      burst: 1_000_000,
    });
    admin.close();
    const key = created.secret;
    // Warm the key so its calls are served from a lease, then fail some (the node never answers:
    // not charged; each unit goes back to the live lease) between served ones.
    for (let i = 0; i < 4; i++) {
      const batch = await Promise.all(Array.from({ length: 16 }, () => call(mesh.gatewayUrl, key)));
      for (const res of batch) expect(res.status).toBe(200);
    }
    let served = 64;
    let failed = 0;
    for (let round = 0; round < 5; round++) {
      const batch = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          fetch(`${mesh.gatewayUrl}/api/chain/chain-id${i % 2 ? "?network=sepolia" : ""}`, {
            headers: { authorization: `Bearer ${key}` },
          }),
        ),
      );
      for (const res of batch) {
        await res.arrayBuffer();
        if (res.status === 200) served++;
        else {
          // The node refused (502), or rpc-proxy has given up on it for now (503): not charged either way.
          expect([502, 503]).toContain(res.status);
          failed++;
        }
      }
    }
    expect(failed).toBe(20);
    const db = new pg.Pool({ connectionString: mesh.databaseUrl, max: 1 });
    try {
      const rollup = async () =>
        (
          await db.query<{ requests: number; counted: number }>(
            "select coalesce(sum(requests), 0)::int as requests, coalesce(sum(counted), 0)::int as counted from usage_daily where account_id = $1",
            [created.account.id],
          )
        ).rows[0];
      await eventually(rollup, (r) => r?.requests === served + failed, 30_000, 200);
      // Every call reported once; only the served ones counted (before: a failed call's unit was
      // counted for it and again for the call that reused it).
      expect(await rollup()).toEqual({ requests: served + failed, counted: served });
    } finally {
      await db.end();
    }
  });

  it("a JSON-RPC batch the node did not answer gives all its units back to its lease: the next batch is served from them, every call counted once", async () => {
    const admin = meshAdmin(mesh);
    const created = await admin.quickstart(`lease-${Math.random()}`, {
      daily: 1_000,
      monthly: 0,
      burst: 1_000_000,
    });
    admin.close();
    const key = created.secret;
    const rpc = async (network: string) => {
      const body = Array.from({ length: 50 }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "eth_chainId" }));
      const res = await fetch(`${mesh.gatewayUrl}/rpc/${network}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      });
      await res.arrayBuffer();
      return res;
    };
    // One lease of 50 units for the batch; the node (sepolia's, dead here) gives no answer.
    const failed = await rpc("sepolia");
    expect([502, 503]).toContain(failed.status);
    // The same 50 units, back in the lease, serve the next batch: numbered as they were counted.
    const served = await rpc("ethereum");
    expect(served.status).toBe(200);
    expect(served.headers.get("x-quota-day-used")).toBe("50");
    const db = new pg.Pool({ connectionString: mesh.databaseUrl, max: 1 });
    try {
      const rollup = async () =>
        (
          await db.query<{ requests: number; counted: number }>(
            "select coalesce(sum(requests), 0)::int as requests, coalesce(sum(counted), 0)::int as counted from usage_daily where account_id = $1",
            [created.account.id],
          )
        ).rows[0];
      await eventually(rollup, (r) => r?.requests === 100, 30_000, 200);
      // Each call reported once (its own record), only the served batch's counted.
      expect(await rollup()).toEqual({ requests: 100, counted: 50 });
    } finally {
      await db.end();
    }
  });
});
