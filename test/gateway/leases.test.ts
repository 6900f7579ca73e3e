// Quota leases across two gateway replicas in front of one quota-meter (a mesh of its own): the
// windows stay exact (1,000 concurrent calls with 100 left serve exactly 100, whichever gateway
// they reach), X-Quota-*-Used numbers every served call once, a hot key stops costing a
// quota-meter hop per call, and what a lease did not use goes back.
import { readFileSync } from "node:fs";
import { type Mesh, meshAdmin, startMesh } from "@tollgate/local";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sharedSettlementEnv } from "../support/devnet.ts";

const devnet = JSON.parse(readFileSync(inject("mesh").devnetFile, "utf8"));
let mesh: Mesh;
let second: string;

beforeAll(async () => {
  mesh = await startMesh({
    stateDir: inject("mesh").stateDir,
    namespace: `leases${process.pid}`,
    env: {
      LOG_LEVEL: "warn",
      REDIS_BUDGET_MS: "2000",
      UPSTREAMS_ETHEREUM: devnet.chains.ethereum.rpcUrl,
      UPSTREAMS_SEPOLIA: devnet.chains.sepolia.rpcUrl,
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

/** quota-meter's Authorize calls so far (a lease grant or a per-call grant is one each). */
async function authorizeCalls(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${mesh.ports["quota-meter"].metrics}/metrics`)).text();
  return text
    .split("\n")
    .filter(
      (l) => l.startsWith("grpc_server_handling_seconds_count{") && l.includes('grpc_method="Authorize"'),
    )
    .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
}

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
    const before = await authorizeCalls();
    for (let round = 0; round < 10; round++) {
      const batch = await Promise.all(Array.from({ length: 20 }, () => call(mesh.gatewayUrl, key)));
      for (const res of batch) {
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
    }
    const hops = (await authorizeCalls()) - before;
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
    // After the lease ends (1 s) and the gateway reports, a call on the OTHER gateway (no lease of
    // its own) asks quota-meter and sees the windows: exactly what was served, plus itself.
    await new Promise((r) => setTimeout(r, 1_800));
    const res = await call(second, key);
    expect(res.status).toBe(200);
    expect(Number(res.headers.get("x-quota-day-used"))).toBe(served + 1);
  });
});
