// SIGTERM to a gateway under load (real mesh processes, a mesh of its own): every request it had
// received is answered in full with a 2xx, new connections are refused (or 503) once the drain
// started, the usage it had buffered reaches quota-meter, and the process exits 0.
import { readFileSync } from "node:fs";
import { type Mesh, meshAdmin, type RunningService } from "@tollgate/local";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CountingProxy } from "../support/counting-proxy.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { eventually } from "../support/eventually.ts";
import { startOwnMesh } from "../support/own-mesh.ts";

const devnet = JSON.parse(readFileSync(inject("mesh").devnetFile, "utf8"));
let mesh: Mesh;
let node: CountingProxy;
const lines: string[] = [];

beforeAll(async () => {
  // The ethereum node behind a proxy that can hold calls: requests stay in flight at the gateway.
  node = await new CountingProxy(devnet.chains.ethereum.rpcUrl).listen();
  mesh = await startOwnMesh({
    stateDir: inject("mesh").stateDir,
    namespace: `drain${process.pid}`,
    env: {
      LOG_LEVEL: "warn",
      REDIS_BUDGET_MS: "2000",
      UPSTREAMS_ETHEREUM: node.url("/"),
      UPSTREAMS_SEPOLIA: devnet.chains.sepolia.rpcUrl,
    },
    serviceEnv: { "payment-verifier": sharedSettlementEnv("spare2") },
    onLine: (service, line) => {
      if (service === "gateway") lines.push(line);
    },
  });
});

afterAll(async () => {
  node?.release();
  await mesh?.stop();
  await node?.close();
});

async function apiKey(): Promise<string> {
  const admin = meshAdmin(mesh);
  try {
    return (await admin.quickstart(`drain-${Math.random()}`, { daily: 10_000, burst: 1_000_000 })).secret;
  } finally {
    admin.close();
  }
}

/** A new connection's answer: its status, or the connection error's code (refused). */
async function freshConnection(url: string): Promise<number | string> {
  try {
    const res = await fetch(url, { headers: { connection: "close" } });
    await res.arrayBuffer();
    return res.status;
  } catch (err) {
    return String((err as { cause?: { code?: string } }).cause?.code ?? err);
  }
}

const exited = (service: RunningService) =>
  new Promise<number | null>((resolve) => {
    if (service.child.exitCode !== null) resolve(service.child.exitCode);
    else service.child.once("exit", (code) => resolve(code));
  });

describe("SIGTERM to a gateway under load", () => {
  it("answers every request it had in full, refuses new connections, flushes usage and exits 0", async () => {
    const key = await apiKey();
    const auth = { authorization: `Bearer ${key}` };
    const { url, service } = await mesh.spawnGateway({ ACCESS_LOG: "false" });
    const head = (await (await fetch(`${url}/api/chain/block-number`, { headers: auth })).json()) as {
      data: { block_number: number | string };
    };
    const blocks = Math.min(40, Number(head.data.block_number) + 1);
    expect(blocks).toBeGreaterThan(5);

    // Distinct calls, each held at the node: all of them are inside the gateway when SIGTERM lands.
    node.mode = "hold";
    const mark = node.requests.length;
    const inFlight = Array.from({ length: blocks }, async (_, n) => {
      const res = await fetch(`${url}/api/chain/block/${n}?network=ethereum`, { headers: auth });
      return { status: res.status, body: (await res.json()) as { data?: { number?: number | string } } };
    });
    const held = () =>
      node
        .since(mark)
        .flatMap((r) => r.methods)
        .filter((m) => m === "eth_getBlockByNumber").length;
    expect(await eventually(held, blocks, 30_000, 50), "calls that reached the node").toBe(blocks);

    const exit = exited(service);
    service.child.kill("SIGTERM");
    // time-based: a window after the signal in which the process must stay up (its calls are held); the
    // refusal of new connections below does not depend on how long it is.
    await new Promise((r) => setTimeout(r, 300));
    // Draining: the process is still up (its calls are held), but takes no new connection.
    expect(service.child.exitCode).toBeNull();
    const health = await freshConnection(`${url}/health`);
    expect(["ECONNREFUSED", 503]).toContain(health);
    const call = await freshConnection(`${url}/api/chain/block-number`);
    expect(["ECONNREFUSED", 503]).toContain(call);

    node.release();
    const answers = await Promise.all(inFlight);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(answers.map((a) => Number(a.body.data?.number))).toEqual(answers.map((_, n) => n));
    expect(await exit, lines.join("\n")).toBe(0);

    // Every served call was reported before the exit (lease units it did not use went back): the
    // next call through the mesh's own gateway is numbered right after them.
    const next = await fetch(`${mesh.gatewayUrl}/api/chain/block-number`, { headers: auth });
    expect(next.status).toBe(200);
    expect(Number(next.headers.get("x-quota-day-used"))).toBe(blocks + 2);
  });
});
