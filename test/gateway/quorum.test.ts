// Quorum reads through the whole mesh (issue 44, part 3): a mesh of its own whose ethereum network is
// three real anvil nodes with CONSENSUS_ETHEREUM=eth_getBalance:2of3. One node made to disagree
// (anvil_setBalance on it alone): the majority's answer is served and charged once. Two disagreeing:
// 502 upstream_disagreement, REST and /rpc alike, and the API key's window counts nothing for them.
// /api/pricing says which methods take a quorum.
import { type AnvilNode, startAnvil } from "@tollgate/devnet/anvil";
import { freePort, type Mesh, meshAdmin } from "@tollgate/local";
import { consensusEnvName, upstreamsEnvName } from "@tollgate/rpc-proxy";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ownDayUsed } from "../support/credits.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { eventually } from "../support/eventually.ts";
import { assertConforms } from "../support/openapi.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { SUITE_BURST } from "../support/quota.ts";

let nodes: AnvilNode[] = [];
let mesh: Mesh;
let apiKey: string;
let accountId: string;
let at: { stateDir: string; quotaMeterAddr: string };

beforeAll(async () => {
  nodes = await Promise.all([0, 1, 2].map(() => startAnvil({ chainId: 1, host: "127.0.0.1", accounts: 1 })));
  mesh = await startOwnMesh({
    stateDir: inject("mesh").stateDir,
    namespace: `quorum${process.pid}`,
    env: { LOG_LEVEL: "warn", REDIS_BUDGET_MS: "2000" },
    serviceEnv: {
      gateway: { EXECUTE_DEADLINE_MS: "4000" },
      "rpc-proxy": {
        [upstreamsEnvName("ethereum")]: nodes.map((n) => n.rpcUrl).join(","),
        [upstreamsEnvName("sepolia")]: `http://127.0.0.1:${await freePort()}`,
        [consensusEnvName("ethereum")]: "eth_getBalance:2of3",
      },
      // No devnet in this mesh (its upstreams are given), so payments settle on the shared devnet.
      "payment-verifier": sharedSettlementEnv("spare4"),
    },
  });
  at = { stateDir: mesh.stateDir, quotaMeterAddr: `127.0.0.1:${mesh.ports["quota-meter"].main}` };
  const admin = meshAdmin(mesh);
  try {
    const made = await admin.quickstart("quorum", { daily: 1_000, monthly: 0, burst: SUITE_BURST });
    apiKey = made.secret;
    accountId = made.account.id;
  } finally {
    admin.close();
  }
});

afterAll(async () => {
  await mesh?.stop();
  await Promise.all(nodes.map((n) => n.stop()));
});

async function setBalances(account: string, wei: readonly bigint[]): Promise<void> {
  await Promise.all(
    nodes.map((n, i) =>
      fetch(n.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "anvil_setBalance",
          params: [account, `0x${wei[i]!.toString(16)}`],
        }),
      }),
    ),
  );
}

const auth = () => ({ Authorization: `Bearer ${apiKey}` });

/** The key's day count as the next metered call shows it (chain-id: one node, no quorum). */
async function nextCount(): Promise<number> {
  const res = await request(mesh.gatewayUrl).get("/api/chain/chain-id").set(auth());
  expect(res.status).toBe(200);
  return Number(res.headers["x-quota-day-used"]);
}

const balancePath = (account: string) => `/api/chain/balance/${account}?network=ethereum`;
const rpcBalance = (account: string) =>
  request(mesh.gatewayUrl)
    .post("/rpc/ethereum")
    .set(auth())
    .send({ jsonrpc: "2.0", id: 7, method: "eth_getBalance", params: [account, "latest"] });

describe("quorum reads through the mesh (CONSENSUS_ETHEREUM=eth_getBalance:2of3)", () => {
  it("/api/pricing lists the network's quorum methods (rpc-proxy's setting), free", async () => {
    const res = await request(mesh.gatewayUrl).get("/api/pricing");
    expect(res.status).toBe(200);
    expect(res.body.data.quorum_reads).toEqual([
      { network: "ethereum", methods: ["eth_getBalance"], agree: 2, asked: 3 },
    ]);
    await assertConforms("get", "/api/pricing", res);
  });

  it("one node disagreeing: the majority's balance is served, REST and /rpc, each charged once", async () => {
    const account = "0x000000000000000000000000000000000000a001";
    await setBalances(account, [5_000n, 5_000n, 7n]);
    const before = await nextCount();
    const rest = await request(mesh.gatewayUrl).get(balancePath(account)).set(auth());
    expect(rest.status).toBe(200);
    expect(rest.body.data.balance).toBe("5000");
    expect(Number(rest.headers["x-quota-day-used"])).toBe(before + 1);
    await assertConforms("get", "/api/chain/balance/{address}", rest);
    const rpc = await rpcBalance(account);
    expect(rpc.status).toBe(200);
    expect(rpc.body).toEqual({ jsonrpc: "2.0", id: 7, result: "0x1388" });
    expect(Number(rpc.headers["x-quota-day-used"])).toBe(before + 2);
  });

  it("two nodes disagreeing: 502 upstream_disagreement, REST and /rpc, and the key is charged nothing", async () => {
    const account = "0x000000000000000000000000000000000000a002";
    await setBalances(account, [1n, 2n, 3n]);
    const before = await nextCount();

    const rest = await request(mesh.gatewayUrl).get(balancePath(account)).set(auth());
    expect(rest.status).toBe(502);
    expect(rest.body).toMatchObject({ data: null, error: { code: "upstream_disagreement" } });
    await assertConforms("get", "/api/chain/balance/{address}", rest);

    const rpc = await rpcBalance(account);
    expect(rpc.status).toBe(502);
    expect(rpc.body).toMatchObject({
      jsonrpc: "2.0",
      id: 7,
      error: { data: { code: "upstream_disagreement" } },
    });

    // The next call is numbered right after the one before the refusals: they took nothing.
    expect(await nextCount()).toBe(before + 1);
    // And once the key's leases settled, the window holds just the served calls.
    expect(await eventually(() => ownDayUsed(at, accountId), before + 1)).toBe(before + 1);
  });
});
