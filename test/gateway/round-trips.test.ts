import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ENDPOINTS, type EndpointId, endpointById, NETWORKS } from "@tollgate/catalog";
import { type Mesh, meshAdmin } from "@tollgate/local";
import { upstreamsEnvName } from "@tollgate/rpc-proxy";
import request from "supertest";
import { decodeFunctionData, type Hex, multicall3Abi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CountingProxy } from "../support/counting-proxy.ts";
import {
  A,
  B,
  CHAIN_NETWORKS,
  type ChainRequest,
  calldata,
  devnet,
  sharedSettlementEnv,
  urlOf,
  validRequests,
} from "../support/devnet.ts";
import { until } from "../support/eventually.ts";
import { assertConforms } from "../support/openapi.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { SUITE_BURST } from "../support/quota.ts";
import { x402Payer } from "../support/x402.ts";

// Its own mesh, whose upstreams are counting proxies in front of the shared devnet's
// nodes: every gateway call must cost exactly one upstream HTTP request.

const THIRD = NETWORKS.find((n) => n.scope === "network-info")!.name;
const proxies = new Map<string, CountingProxy>();
let mesh: Mesh;
let stateDir: string;
let apiKey: string;

/** Upstream requests the mesh's startup made, before any test call. */
let startupRequests = 0;
/** Upstream requests the calls below are expected to cost, for the final tally. */
let expectedRequests = 0;

const total = () => [...proxies.values()].reduce((n, p) => n + p.requests.length, 0);

/** Resolves once `done()` holds; fails the test after 10 s. */
const waitFor = (done: () => boolean) => until("the round trips", done, 10_000, 10);

beforeAll(async () => {
  // Metering round trips get room on a loaded machine, as in the shared mesh.
  const env: Record<string, string> = { LOG_LEVEL: "warn", REDIS_BUDGET_MS: "2000" };
  for (const network of [...CHAIN_NETWORKS, THIRD]) {
    const target = devnet.chains[network]?.rpcUrl;
    if (!target) throw new Error(`the devnet has no ${network} chain`);
    const proxy = await new CountingProxy(target).listen();
    proxies.set(network, proxy);
    env[upstreamsEnvName(network)] = proxy.url();
  }
  stateDir = mkdtempSync(join(tmpdir(), "tollgate-round-trips-"));
  mesh = await startOwnMesh({
    stateDir,
    // Its own Redis keys and NATS streams on the shared servers.
    namespace: `roundtrips${process.pid}`,
    env,
    serviceEnv: {
      // No background head polls while the file counts (rpc-proxy's UPSTREAM_HEAD_POLL_MS);
      // the startup poll still runs, before the mesh is ready.
      "rpc-proxy": { UPSTREAM_HEAD_POLL_MS: "600000" },
      // One call here pays (x402 exact), to this mesh's own facilitator account.
      "payment-verifier": sharedSettlementEnv("spare5"),
    },
  });
  startupRequests = total();

  const admin = meshAdmin(mesh);
  try {
    apiKey = (await admin.quickstart("round-trips", { burst: SUITE_BURST })).secret;
  } finally {
    admin.close();
  }
});

afterAll(async () => {
  await mesh?.stop();
  await Promise.all([...proxies.values()].map((p) => p.close()));
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

/**
 * Calls the second mesh's gateway and returns the upstream requests the call cost on
 * `network`'s proxy, after checking no other proxy was touched.
 */
async function trip(id: EndpointId, req: ChainRequest, network: string, status = 200) {
  const endpoint = endpointById(id)!;
  const proxy = proxies.get(network)!;
  const mark = proxy.requests.length;
  const before = total();
  const url = urlOf(endpoint.path, req);
  const res =
    endpoint.method === "GET"
      ? await request(mesh.gatewayUrl).get(url).set("Authorization", `Bearer ${apiKey}`)
      : await request(mesh.gatewayUrl)
          .post(url)
          .set({ Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" })
          .send(JSON.stringify(req.body ?? {}));
  expect(res.status, `${id} on ${network}: ${JSON.stringify(res.body)}`).toBe(status);
  await assertConforms(endpoint.method.toLowerCase(), url, res);
  const sent = proxy.requests.slice(mark);
  expect(total() - before, `${id} on ${network}: upstream requests on other networks`).toBe(sent.length);
  return { res, sent };
}

/** JSON-RPC methods each endpoint's one request carries. */
const METHODS: Record<EndpointId, string[]> = {
  allowance: ["eth_call"],
  blockNumber: ["eth_blockNumber"],
  block: ["eth_getBlockByNumber"],
  call: ["eth_call"],
  chainId: ["eth_chainId"],
  code: ["eth_getCode"],
  contract: ["eth_call"],
  ens: ["eth_call"],
  erc1155Balance: ["eth_call"],
  erc20Balance: ["eth_call"],
  // validRequests gives `address`: sender and recipient filters in one batch.
  erc20Transfers: ["eth_getLogs", "eth_getLogs"],
  erc721Tokens: ["eth_call"],
  estimateGas: ["eth_estimateGas"],
  events: ["eth_getLogs"],
  networkInfo: ["eth_chainId", "eth_blockNumber", "eth_gasPrice"],
  balance: ["eth_getBalance"],
  nftMetadata: ["eth_call"],
  receipt: ["eth_getTransactionReceipt"],
  transaction: ["eth_getTransactionByHash"],
};

describe("one upstream HTTP request per gateway call", () => {
  it("the mesh's only startup traffic was one chain-id and head poll per upstream, and no background polls", () => {
    expect(startupRequests).toBe(proxies.size);
    for (const proxy of proxies.values()) {
      expect(proxy.requests).toHaveLength(1);
      expect(proxy.requests[0]!.methods).toEqual(["eth_chainId", "eth_blockNumber"]);
    }
  });

  describe.each(CHAIN_NETWORKS)("on %s", (network) => {
    const valid = validRequests(network);
    it.each(ENDPOINTS.map((e) => e.id))("%s", async (id) => {
      const { sent } = await trip(id, valid[id], network);
      expectedRequests += 1;
      expect(sent).toHaveLength(1);
      expect(sent[0]!.methods).toEqual(METHODS[id]);
      expect(sent[0]!.batch).toBe(METHODS[id].length > 1);
    });

    it("erc721-tokens with max=1000: balanceOf and 1000 tokenOfOwnerByIndex in one Multicall3 eth_call", async () => {
      const req = { query: { ...valid.erc721Tokens.query, max: "1000" } };
      const { res, sent } = await trip("erc721Tokens", req, network);
      expectedRequests += 1;
      expect(res.body.data).toMatchObject({ count: 5, balance: "5" });
      expect(sent).toHaveLength(1);
      expect(sent[0]!.methods).toEqual(["eth_call"]);
      const [tx] = (sent[0]!.body as { params: [{ to: string; data: Hex }] }).params;
      expect(tx.to.toLowerCase()).toBe(devnet.demo.multicall3.toLowerCase());
      const decoded = decodeFunctionData({ abi: multicall3Abi, data: tx.data });
      expect(decoded.functionName).toBe("aggregate3");
      expect((decoded.args as unknown as [unknown[]])[0]).toHaveLength(1001);
    });

    it("erc721-tokens without max: the default of 50 indexes, still one eth_call", async () => {
      const { max: _omit, ...query } = valid.erc721Tokens.query as Record<string, string>;
      const { sent } = await trip("erc721Tokens", { query }, network);
      expectedRequests += 1;
      const [tx] = (sent[0]!.body as { params: [{ data: Hex }] }).params;
      const decoded = decodeFunctionData({ abi: multicall3Abi, data: tx.data });
      expect((decoded.args as unknown as [unknown[]])[0]).toHaveLength(51);
    });

    it("erc20-transfers: with `address` one batch of two filters, without it one eth_getLogs", async () => {
      const withAddress = await trip("erc20Transfers", valid.erc20Transfers, network);
      expect(withAddress.res.body.data.count).toBe(3);
      expect(withAddress.sent).toHaveLength(1);
      expect(withAddress.sent[0]!.batch).toBe(true);
      const { address: _omit, ...query } = valid.erc20Transfers.query as Record<string, string>;
      const without = await trip("erc20Transfers", { query }, network);
      expectedRequests += 2;
      expect(without.res.body.data.count).toBe(6);
      expect(without.sent).toHaveLength(1);
      expect(without.sent[0]!.methods).toEqual(["eth_getLogs"]);
    });

    it("failures cost one request too: a revert, an unknown block, an unknown ENS name and reverse lookup", async () => {
      const demo = devnet.demo[network];
      const cases: [EndpointId, ChainRequest, number][] = [
        [
          "call",
          { query: { network }, body: { to: demo.reverter.address, data: calldata.alwaysReverts } },
          422,
        ],
        [
          "estimateGas",
          { query: { network }, body: { from: A, to: demo.reverter.address, data: calldata.alwaysReverts } },
          422,
        ],
        ["block", { path: { number: "99999999" }, query: { network } }, 404],
        ["ens", { path: { input: demo.ens.unknownName }, query: { network } }, 404],
        ["ens", { path: { input: A }, query: { network } }, 200],
        ["erc721Tokens", { query: { contract: demo.erc721.address, address: B, max: "1" } }, 200],
      ];
      for (const [id, req, status] of cases) {
        const target = (req.query?.network as string | undefined) ?? "ethereum";
        const { sent } = await trip(id, req, target, status);
        expectedRequests += 1;
        expect(sent, `${id} ${JSON.stringify(req)}`).toHaveLength(1);
      }
    });
  });

  it("network-info on the third network: one batch of three", async () => {
    const { res, sent } = await trip("networkInfo", { query: { network: THIRD } }, THIRD);
    expectedRequests += 1;
    expect(res.body.data.chain_id).toBe("0x1237");
    expect(sent).toHaveLength(1);
    expect(sent[0]!.methods).toEqual(METHODS.networkInfo);
  });

  it("bad input costs no upstream request at all", async () => {
    const before = total();
    for (const url of [
      "/api/chain/block/abc",
      `/api/chain/erc721-tokens?contract=${A}&address=${A}&max=1001`,
      "/api/chain/ens/..eth",
      "/api/chain/events?from_block=9&to_block=3",
    ]) {
      const res = await request(mesh.gatewayUrl).get(url).set("Authorization", `Bearer ${apiKey}`);
      expect(res.status, url).toBe(400);
    }
    expect(total()).toBe(before);
  });

  it("paid calls: a refused payment costs no upstream request; once this client has paid, its next paid call's node request starts beside Verify, and is dropped when Verify refuses", async () => {
    const proxy = proxies.get("ethereum")!;
    const url = `${mesh.gatewayUrl}${endpointById("blockNumber")!.path}`;
    // Decodes as nothing payment-verifier accepts: refused 402, whoever sends it.
    const forged = () => fetch(url, { headers: { "Payment-Signature": "bm90IGEgcGF5bWVudA==" } });
    const refusedWithout = async (upstream: number) => {
      const before = proxy.requests.length;
      const res = await forged();
      const body = (await res.json()) as { data: unknown; error: { code: string } };
      expect(res.status).toBe(402);
      expect(body.data).toBeNull();
      expect(body.error.code).toBe("payment_invalid");
      if (upstream > 0) await waitFor(() => proxy.requests.length - before >= upstream);
      return proxy.requests.length - before;
    };

    // Nothing paid yet from this address: Verify first, and its refusal calls no node.
    expect(await refusedWithout(0)).toBe(0);
    const payer = x402Payer(devnet, "payer6");
    const before = proxy.requests.length;
    const paid = await payer.fetch(url);
    expect(paid.status, await paid.clone().text()).toBe(200);
    expect(proxy.requests.length - before).toBe(1);
    // Paid: the next paid call's node request is already under way when Verify refuses it; its
    // answer is not served. The refusal ends the trust: the next one waits for Verify again.
    expect(await refusedWithout(1)).toBe(1);
    expect(await refusedWithout(0)).toBe(0);
    expectedRequests += 2;
  });

  it("sent nothing else upstream during the whole file", () => {
    expect(total() - startupRequests).toBe(expectedRequests);
  });
});
