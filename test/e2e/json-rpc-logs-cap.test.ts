// eth_getLogs through POST /rpc/{network} is held to the block-range cap of /api/events: on a mesh
// of its own whose rpc-proxy allows 5 blocks (LOGS_MAX_BLOCK_RANGE=5), behind a proxy that records
// every call to the shared devnet's ethereum node. A range over the cap is refused 400 with a
// JSON-RPC error body before the node is asked, and the API key's units do not move; a range
// within it is answered as the node answers, one unit.
//
// Units are counted without leases (LEASE_MAX_UNITS=1 on this mesh: every call is counted when it
// is authorized), so no read waits for a lease to end and its unused units to come back, and the
// count is polled until it reaches what the calls should leave (a refused call's unit is given back
// with the gateway's next usage batch). It once read a lease's units still on their way back under
// load: expected 14 to be 13.
import { type Mesh, meshAdmin } from "@tollgate/local";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CountingProxy } from "../support/counting-proxy.ts";
import { devnet, sharedSettlementEnv } from "../support/devnet.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { dayUsed } from "../support/quota.ts";

const CAP = 5;
const NODE = devnet.chains.ethereum?.rpcUrl ?? "";
let mesh: Mesh;
let node: CountingProxy;
let apiKey: string;

async function nodeCall(method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(NODE, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return ((await res.json()) as { result: unknown }).result;
}

beforeAll(async () => {
  node = await new CountingProxy(NODE).listen();
  mesh = await startOwnMesh({
    stateDir: inject("mesh").stateDir,
    namespace: `rpccap${process.pid}`,
    env: {
      LOG_LEVEL: "warn",
      // The gateway asks quota-meter on every call, and quota-meter grants no leases.
      LEASE_MAX_UNITS: "1",
      UPSTREAMS_ETHEREUM: node.url("/"),
      UPSTREAMS_SEPOLIA: devnet.chains.sepolia?.rpcUrl ?? "",
    },
    serviceEnv: {
      "rpc-proxy": { LOGS_MAX_BLOCK_RANGE: String(CAP) },
      "payment-verifier": sharedSettlementEnv("spare2"),
    },
  });
  const admin = meshAdmin(mesh);
  try {
    ({ secret: apiKey } = await admin.quickstart(`rpccap-${process.pid}`, { burst: 100_000 }));
  } finally {
    admin.close();
  }
  // Blocks enough for a range over the cap below the head (the devnet's deployments usually are).
  const head = BigInt((await nodeCall("eth_blockNumber", [])) as string);
  if (head < BigInt(2 * CAP)) await nodeCall("anvil_mine", [`0x${(2n * BigInt(CAP) - head).toString(16)}`]);
});

afterAll(async () => {
  await mesh?.stop();
  await node?.close();
});

async function rpc(body: unknown) {
  const res = await fetch(`${mesh.gatewayUrl}/rpc/ethereum`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as unknown };
}

/** Metered reads made so far: each is counted when authorized, so units() leaves them out. */
let reads = 0;
/** The key's units counted today, the reads of them left out. */
async function units(): Promise<number> {
  const used = await dayUsed(apiKey, mesh.gatewayUrl);
  reads++;
  return used - reads;
}
/** Polls units() until it is `expected` (a given-back unit lands with a usage batch), or fails. */
const unitsReach = (expected: number) =>
  expect.poll(units, { timeout: 30_000, interval: 200 }).toBe(expected);

const logsCalls = () => node.requests.filter((r) => r.methods.includes("eth_getLogs")).length;
const getLogs = (id: number, filter: Record<string, string>) => ({
  jsonrpc: "2.0",
  id,
  method: "eth_getLogs",
  params: [filter],
});

describe(`eth_getLogs on /rpc with a cap of ${CAP} blocks`, () => {
  it("a range over the cap is 400 block_range_too_large, the node not asked, nothing counted", async () => {
    const asked = logsCalls();
    const refusal = {
      jsonrpc: "2.0",
      // Refused by Tollgate's own limit (-32000), the API's code in data as on /api/events.
      error: {
        code: -32000,
        data: { code: "block_range_too_large", max_block_range: CAP },
      },
    };
    // Numbered (six blocks), a tag (0 to the head) and a missing fromBlock read as the head's.
    const over = await rpc(getLogs(1, { fromBlock: "0x0", toBlock: `0x${CAP.toString(16)}` }));
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ ...refusal, id: 1 });
    const toHead = await rpc(getLogs(2, { fromBlock: "earliest", toBlock: "latest" }));
    expect(toHead.status).toBe(400);
    expect(toHead.body).toMatchObject({ ...refusal, id: 2 });
    // In a batch: the whole batch is refused, one error per call, none relayed.
    const batch = await rpc([
      { jsonrpc: "2.0", id: "a", method: "eth_chainId" },
      getLogs(3, { fromBlock: "0x1", toBlock: `0x${(CAP + 1).toString(16)}` }),
    ]);
    expect(batch.status).toBe(400);
    expect(batch.body).toMatchObject([
      { ...refusal, id: "a" },
      { ...refusal, id: 3 },
    ]);
    expect(logsCalls()).toBe(asked);
    // The key is new: nothing counted.
    await unitsReach(0);
  });

  it("a range within the cap is answered as the node answers, one unit", async () => {
    await unitsReach(0);
    const asked = logsCalls();
    const filter = { fromBlock: "0x0", toBlock: `0x${(CAP - 1).toString(16)}` };
    const within = await rpc(getLogs(7, filter));
    expect(within.status).toBe(200);
    expect(within.body).toEqual({ jsonrpc: "2.0", id: 7, result: await nodeCall("eth_getLogs", [filter]) });
    expect(logsCalls()).toBe(asked + 1);
    await unitsReach(1);
  });
});
