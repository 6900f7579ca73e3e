// POST /rpc/{network} on the shared mesh with unmodified viem (its `http` transport, batching on
// and off) and an API key, compared call by call with the same client pointed at the devnet node
// directly; then paid per call with the official x402 fetch wrapper as viem's fetch.
import { readFileSync } from "node:fs";
import { ALL_NETWORKS, priceAtomic, RPC_METHODS, rpcPrice } from "@tollgate/catalog";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { type Address, createPublicClient, type Hex, http, toFunctionSelector } from "viem";
import { describe, expect, inject, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.ts";
import { get } from "../support/gateway.ts";
import { x402Payer } from "../support/x402.ts";

const shared = inject("mesh");
const devnet = JSON.parse(readFileSync(shared.devnetFile, "utf8"));
const NODE = devnet.chains.ethereum.rpcUrl as string;
const reverter = devnet.chains.ethereum.contracts.reverter as Address;
const URL_ETH = `${shared.gatewayUrl}/rpc/ethereum`;

const keyed = (apiKey: string, batch = false) =>
  createPublicClient({
    transport: http(URL_ETH, {
      batch,
      retryCount: 0,
      fetchOptions: { headers: { Authorization: `Bearer ${apiKey}` } },
    }),
  });
const direct = createPublicClient({ transport: http(NODE, { retryCount: 0 }) });

/** The key's calls counted today, as a REST call shows them (itself included: each read counts one). */
async function dayUsed(apiKey: string): Promise<number> {
  const res = await get("/api/chain/chain-id", { Authorization: `Bearer ${apiKey}` });
  return Number(res.headers["x-quota-day-used"]);
}

async function rpc(body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(URL_ETH, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as unknown };
}

describe("JSON-RPC endpoint (viem unchanged)", () => {
  it("answers every served method as the node does", async () => {
    const { apiKey } = await createAccountWithKey({ daily: 0, monthly: 0 });
    const ours = keyed(apiKey);
    const head = await direct.getBlockNumber({ cacheTime: 0 });
    // A block with a transaction (the devnet's deployments): its hash, transaction and receipt.
    let withTx = await direct.getBlock({ blockNumber: 1n });
    for (let n = 2n; withTx.transactions.length === 0 && n <= head; n++)
      withTx = await direct.getBlock({ blockNumber: n });
    const txHash = withTx.transactions[0] as Hex;
    const at = { blockNumber: withTx.number };
    const pairs: Array<[string, (c: typeof direct) => Promise<unknown>]> = [
      ["eth_chainId", (c) => c.getChainId()],

      ["eth_getBalance", (c) => c.getBalance({ address: reverter, ...at })],
      ["eth_getCode", (c) => c.getCode({ address: reverter, ...at })],
      ["eth_getStorageAt", (c) => c.getStorageAt({ address: reverter, slot: "0x0", ...at })],
      ["eth_getTransactionCount", (c) => c.getTransactionCount({ address: reverter, ...at })],
      ["eth_call", (c) => c.call({ to: reverter, data: "0x", ...at }).catch((e: Error) => e.name)],
      [
        "eth_estimateGas",
        (c) => c.estimateGas({ to: reverter, data: "0x", ...at }).catch((e: Error) => e.name),
      ],
      ["eth_getLogs", (c) => c.getLogs({ fromBlock: 0n, toBlock: withTx.number })],
      ["eth_getBlockByNumber", (c) => c.getBlock(at)],
      ["eth_getBlockByHash", (c) => c.getBlock({ blockHash: withTx.hash as Hex, includeTransactions: true })],
      ["eth_getTransactionByHash", (c) => c.getTransaction({ hash: txHash })],
      ["eth_getTransactionReceipt", (c) => c.getTransactionReceipt({ hash: txHash })],
      [
        "eth_feeHistory",
        (c) => c.getFeeHistory({ blockCount: 2, blockNumber: withTx.number, rewardPercentiles: [50] }),
      ],
      ["net_version", (c) => c.request({ method: "net_version" as never })],
      ["web3_clientVersion", (c) => c.request({ method: "web3_clientVersion" })],
    ];
    for (const [method, read] of pairs) {
      expect(await read(ours as typeof direct), method).toEqual(await read(direct));
    }
    // Reads of the moment (they move with the chain): the head as the node has it by then.
    const ourHead = await ours.getBlockNumber({ cacheTime: 0 });
    expect(ourHead).toBeGreaterThanOrEqual(head);
    expect(ourHead).toBeLessThanOrEqual(await direct.getBlockNumber({ cacheTime: 0 }));
    expect(typeof (await ours.getGasPrice())).toBe("bigint");
    expect(typeof (await ours.estimateMaxPriorityFeePerGas())).toBe("bigint");
    // Every method the catalog serves was asked above.
    expect(
      [...pairs.map(([m]) => m), "eth_blockNumber", "eth_gasPrice", "eth_maxPriorityFeePerGas"].sort(),
    ).toEqual(Object.keys(RPC_METHODS).sort());
  });

  it("a batch of 20 (viem's batching) counts 20 units once; a refused method is answered here and counts nothing", async () => {
    const { apiKey } = await createAccountWithKey({ daily: 1000, monthly: 0 });
    const batched = keyed(apiKey, true);
    const before = await dayUsed(apiKey);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        batched.getBalance({ address: `0x${String(i + 1).padStart(40, "0")}` }),
      ),
    );
    expect(answers).toHaveLength(20);
    // The 20 calls and this read.
    expect(await dayUsed(apiKey)).toBe(before + 21);

    const refused = await rpc(
      { jsonrpc: "2.0", id: 7, method: "eth_sendRawTransaction", params: ["0x00"] },
      {
        Authorization: `Bearer ${apiKey}`,
      },
    );
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({ jsonrpc: "2.0", id: 7, error: { code: -32601 } });
    expect(await dayUsed(apiKey)).toBe(before + 22);
  });

  it("charges a batch the node answered whole, a node error inside it included; answers in order with the ids sent", async () => {
    const { apiKey } = await createAccountWithKey({ daily: 1000, monthly: 0 });
    const before = await dayUsed(apiKey);
    const call = { to: reverter, data: toFunctionSelector("alwaysReverts()") };
    const res = await rpc(
      [
        { jsonrpc: "2.0", id: "a", method: "eth_chainId" },
        { jsonrpc: "2.0", id: 2, method: "eth_call", params: [call, "latest"] },
        { jsonrpc: "2.0", id: null, method: "eth_accounts" },
        { jsonrpc: "2.0", id: 4, method: "eth_getBalance", params: ["not-an-address", "latest"] },
      ],
      { Authorization: `Bearer ${apiKey}` },
    );
    expect(res.status).toBe(200);
    const [chainId, reverted, notServed, badParams] = res.body as Array<Record<string, unknown>>;
    expect(chainId).toEqual({ jsonrpc: "2.0", id: "a", result: "0x1" });
    expect(reverted).toMatchObject({ jsonrpc: "2.0", id: 2, error: { code: 3 } });
    expect(notServed).toMatchObject({ id: null, error: { code: -32601 } });
    expect(badParams).toMatchObject({ id: 4, error: { code: -32602 } });
    // The two relayed calls, each a unit, and this read; the two answered here, nothing.
    expect(await dayUsed(apiKey)).toBe(before + 3);
  });

  it("refuses what it cannot serve with a JSON-RPC error body, its HTTP status kept", async () => {
    const { apiKey } = await createAccountWithKey({ daily: 0, monthly: 0 });
    const tooMany = await rpc(
      Array.from({ length: 101 }, (_, id) => ({ jsonrpc: "2.0", id, method: "eth_chainId" })),
    );
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toMatchObject({
      id: null,
      error: { code: -32600, data: { code: "invalid_parameter" } },
    });
    const malformed = await fetch(URL_ETH, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{",
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
    const badKey = await rpc(
      { jsonrpc: "2.0", id: 1, method: "eth_chainId" },
      { Authorization: "Bearer tg_nope" },
    );
    expect(badKey.status).toBe(401);
    expect(badKey.body).toMatchObject({ id: 1, error: { code: -32000, data: { code: "invalid_api_key" } } });
    // The third chain too (its REST endpoints are network-info only).
    const third = await fetch(`${shared.gatewayUrl}/rpc/${ALL_NETWORKS[2]}`, {
      method: "POST",
      headers: { "content-type": "application/json", Authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "eth_chainId" }),
    });
    expect(await third.json()).toEqual({ jsonrpc: "2.0", id: 9, result: "0x1237" });
    const unknownNetwork = await fetch(`${shared.gatewayUrl}/rpc/mars`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId" }),
    });
    expect(unknownNetwork.status).toBe(400);
  });

  it("/api/pricing, /openapi.json and /llms.txt list the endpoint and every served method's price", async () => {
    const pricing = (await get("/api/pricing")).body as {
      data: {
        json_rpc: { path: string; batch_max: number; methods: Array<{ method: string; price_usd: string }> };
      };
    };
    expect(pricing.data.json_rpc).toMatchObject({ path: "/rpc/{network}", batch_max: 100 });
    expect(Object.fromEntries(pricing.data.json_rpc.methods.map((m) => [m.method, m.price_usd]))).toEqual(
      Object.fromEntries(Object.entries(RPC_METHODS).map(([m, d]) => [m, d.price])),
    );
    const doc = (await get("/openapi.json")).body as {
      paths: Record<string, { post?: { requestBody?: unknown } }>;
    };
    expect(doc.paths["/rpc/{network}"]?.post?.requestBody).toBeDefined();
    const llms = await (await fetch(`${shared.gatewayUrl}/llms.txt`)).text();
    for (const [method, d] of Object.entries(RPC_METHODS)) expect(llms).toContain(`\`${method}\` ${d.price}`);
  });

  it("answers 402 with offers at the body's own price; the official x402 client pays exactly it", async () => {
    const body = [
      { jsonrpc: "2.0", id: 1, method: "eth_blockNumber" },
      { jsonrpc: "2.0", id: 2, method: "eth_call", params: [{ to: reverter, data: "0x" }, "latest"] },
      { jsonrpc: "2.0", id: 3, method: "eth_getLogs", params: [{ fromBlock: "0x0", toBlock: "0x1" }] },
    ];
    const price = rpcPrice(["eth_blockNumber", "eth_call", "eth_getLogs"]);
    expect(price).toBe("0.011");
    const challenge = await rpc(body);
    expect(challenge.status).toBe(402);
    expect(challenge.body).toMatchObject([
      { id: 1, error: { data: { code: "payment_required" } } },
      { id: 2 },
      { id: 3 },
    ]);
    const offers = decodePaymentRequiredHeader(challenge.headers.get("payment-required") ?? "");
    const exact = offers.accepts.find((a) => a.scheme === "exact");
    expect(exact?.amount).toBe(String(priceAtomic(price)));

    const payer = x402Payer(devnet, "payer6");
    const paid = await payer.fetch(URL_ETH, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(paid.status).toBe(200);
    const answers = (await paid.json()) as Array<{ id: number }>;
    expect(answers.map((a) => a.id)).toEqual([1, 2, 3]);
    const receipt = decodePaymentResponseHeader(paid.headers.get("payment-response") ?? "");
    expect(receipt.success).toBe(true);
    // viem with the paying fetch: one more paid call, the node's answer.
    const client = createPublicClient({ transport: http(URL_ETH, { fetchFn: payer.fetch, retryCount: 0 }) });
    expect(await client.getChainId()).toBe(1);
  });
});
