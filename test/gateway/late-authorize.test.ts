// An Authorize answered after the gateway's deadline: the gateway has answered the call 503, so
// the unit it would have been must not stay counted. quota-meter reaches the machine's real Redis
// through a TCP proxy this file controls (a stand-in for a slow link: it holds the bytes), so its
// Authorize script runs, and counts, only after the gateway gave up.
import { readFileSync } from "node:fs";
import { type Mesh, meshAdmin } from "@tollgate/local";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { REDIS_PORT } from "../quota-meter/helpers.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";

const devnet = JSON.parse(readFileSync(inject("mesh").devnetFile, "utf8"));
let mesh: Mesh;
let proxy: Awaited<ReturnType<typeof tcpProxy>>;

beforeAll(async () => {
  proxy = await tcpProxy(REDIS_PORT);
  mesh = await startOwnMesh({
    stateDir: inject("mesh").stateDir,
    namespace: `lateauth${process.pid}`,
    env: {
      LOG_LEVEL: "warn",
      AUTHORIZE_DEADLINE_MS: "500",
      UPSTREAMS_ETHEREUM: devnet.chains.ethereum.rpcUrl,
      UPSTREAMS_SEPOLIA: devnet.chains.sepolia.rpcUrl,
    },
    serviceEnv: {
      // Past the gateway's deadline quota-meter still waits for Redis (no fail-open): the late
      // answer this file is about.
      "quota-meter": { REDIS_URL: proxy.url("redis"), REDIS_BUDGET_MS: "5000", REDIS_MAX_WAIT_MS: "5000" },
      "payment-verifier": { ...sharedSettlementEnv("spare3") },
    },
  });
});

afterAll(async () => {
  await mesh?.stop();
  await proxy?.close();
});

const call = (key: string) =>
  fetch(`${mesh.gatewayUrl}/api/chain/chain-id`, { headers: { authorization: `Bearer ${key}` } });

async function released(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${mesh.ports["quota-meter"].metrics}/metrics`)).text();
  const line = text
    .split("\n")
    .find((l) => l.startsWith("quota_authorizations_released_total{") && l.includes('result="applied"'));
  return Number(line?.split(" ").at(-1) ?? 0);
}

describe("an Authorize answered after the gateway's deadline (stand-in: a TCP proxy holding quota-meter's Redis bytes)", () => {
  it("is answered 503 and leaves the window as it was: the next served call is numbered right after the last served one", async () => {
    const admin = meshAdmin(mesh);
    const key = await admin
      .quickstart(`late-${Math.random()}`, { daily: 1_000, monthly: 0, burst: 1_000_000 })
      .then((k) => k.secret)
      .finally(() => admin.close());
    const first = await call(key);
    expect(first.status).toBe(200);
    expect(first.headers.get("x-quota-day-used")).toBe("1");
    await first.arrayBuffer();
    const releasedBefore = await released();

    proxy.stall();
    const late = await call(key);
    expect(late.status).toBe(503);
    expect(((await late.json()) as { error: { code: string } }).error.code).toBe("service_unavailable");
    // Redis gets the script only now, well after the gateway answered: it counts, then gives back.
    // time-based: a fixed pause on purpose: it is the lateness under test, not a wait for a result.
    await new Promise((r) => setTimeout(r, 1_000));
    await proxy.restore();
    // The gateway's release of that Authorize reaches quota-meter with its next usage batch.
    await expect.poll(released, { timeout: 30_000, interval: 100 }).toBe(releasedBefore + 1);

    const next = await call(key);
    expect(next.status).toBe(200);
    expect(next.headers.get("x-quota-day-used")).toBe("2");
    await next.arrayBuffer();
  });
});
