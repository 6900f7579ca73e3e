// POST /rpc/{network} on the shared mesh with unmodified ethers v6: a JsonRpcProvider whose
// FetchRequest carries an API key, compared call by call with a provider on the devnet node
// directly; ethers' own batching (on by default) counted: one plan unit per call it sent.
import { readDevnetFile } from "@tollgate/devnet";
import { Contract, FetchRequest, id, JsonRpcProvider } from "ethers";
import { afterAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.ts";
import { get, mesh } from "../support/gateway.ts";

const devnet = readDevnetFile(mesh.devnetFile);
const demo = devnet.demo.ethereum;
const URL_ETH = `${mesh.gatewayUrl}/rpc/ethereum`;
const providers: JsonRpcProvider[] = [];

/** ethers as its docs show it for an authenticated endpoint: a FetchRequest with the header set. */
function keyed(apiKey: string): JsonRpcProvider {
  const request = new FetchRequest(URL_ETH);
  request.setHeader("Authorization", `Bearer ${apiKey}`);
  const provider = new JsonRpcProvider(request);
  providers.push(provider);
  return provider;
}
const direct = new JsonRpcProvider(devnet.chains.ethereum?.rpcUrl);
providers.push(direct);
afterAll(() => {
  for (const p of providers) p.destroy();
});

/** Every JSON-RPC call a provider sent (ethers reports each POST's payload as a debug event). */
function sentCalls(provider: JsonRpcProvider): { posts: unknown[]; calls: () => number } {
  const posts: unknown[] = [];
  provider.on("debug", (e: { action: string; payload?: unknown }) => {
    if (e.action === "sendRpcPayload") posts.push(e.payload);
  });
  return { posts, calls: () => posts.reduce<number>((n, p) => n + (Array.isArray(p) ? p.length : 1), 0) };
}

/** The key's calls counted today, as a REST call shows them (itself included). */
async function dayUsed(apiKey: string): Promise<number> {
  const res = await get("/api/chain/chain-id", { Authorization: `Bearer ${apiKey}` });
  return Number(res.headers["x-quota-day-used"]);
}

/** A value as ethers gives it, comparable across providers (its objects hold their provider). */
const plain = (v: unknown) =>
  JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? `${x}n` : x))) as unknown;
/** A call exception as ethers reports it: its code, revert data and decoded reason. */
const failure = (e: { code?: string; data?: string; reason?: string }) => ({
  code: e.code,
  data: e.data,
  reason: e.reason,
});

const erc20 = (p: JsonRpcProvider) =>
  new Contract(demo.erc20.address, ["function balanceOf(address) view returns (uint256)"], p);
const holder = devnet.accounts.find((a) => a.role === "A")?.address as string;

describe("JSON-RPC endpoint (ethers v6 unchanged)", () => {
  it("answers getBlockNumber, getBalance, getCode, call, getLogs, getBlock, getTransaction and its receipt as the node does", async () => {
    const { apiKey } = await createAccountWithKey({ daily: 0, monthly: 0 });
    const ours = keyed(apiKey);
    const head = await direct.getBlockNumber();
    // A block with a transaction (the devnet's seeding): its transaction and receipt.
    let n = 1;
    let withTx = await direct.getBlock(n);
    while (withTx && withTx.transactions.length === 0 && n < head) withTx = await direct.getBlock(++n);
    const txHash = withTx?.transactions[0] as string;
    const at = withTx?.number as number;
    const reverter = demo.reverter.address;
    const reads: Array<[string, (p: JsonRpcProvider) => Promise<unknown>]> = [
      ["getNetwork", (p) => p.getNetwork().then((net) => net.chainId)],
      ["getBlockNumber", (p) => p.getBlockNumber()],
      ["getBalance", (p) => p.getBalance(holder, at)],
      ["getCode", (p) => p.getCode(reverter)],
      ["getStorage", (p) => p.getStorage(reverter, 0)],
      ["getTransactionCount", (p) => p.getTransactionCount(holder, at)],
      ["call", (p) => p.call({ to: reverter, data: id("ok()").slice(0, 10) })],
      [
        "call (reverts)",
        (p) => p.call({ to: reverter, data: id("alwaysReverts()").slice(0, 10) }).catch(failure),
      ],
      ["Contract balanceOf", (p) => erc20(p).getFunction("balanceOf")(holder)],
      [
        "estimateGas",
        (p) => p.estimateGas({ from: demo.estimateGas.from, to: demo.estimateGas.to, value: 1n }),
      ],
      ["getLogs", (p) => p.getLogs({ fromBlock: 0, toBlock: at })],
      [
        "getLogs (Transfer topic)",
        (p) =>
          p.getLogs({
            address: demo.erc20.address,
            topics: [id("Transfer(address,address,uint256)")],
            fromBlock: 0,
          }),
      ],
      ["getBlock", (p) => p.getBlock(at)],
      ["getBlock (prefetched transactions)", (p) => p.getBlock(withTx?.hash as string, true)],
      ["getBlock latest", (p) => p.getBlock("latest")],
      ["getTransaction", (p) => p.getTransaction(txHash)],
      ["getTransactionReceipt", (p) => p.getTransactionReceipt(txHash)],
    ];
    for (const [name, read] of reads) {
      expect(plain(await read(ours)), name).toEqual(plain(await read(direct)));
    }
    expect(await ours.call({ to: reverter, data: id("ok()").slice(0, 10) })).toBe(
      `0x${"2a".padStart(64, "0")}`,
    );
    expect(
      failure(await ours.call({ to: reverter, data: id("alwaysReverts()").slice(0, 10) }).catch((e) => e)),
    ).toMatchObject({
      code: "CALL_EXCEPTION",
      reason: demo.reverter.reason,
    });
    // Reads of the moment (they move with the chain): answered, of the node's kind.
    const fees = await ours.getFeeData();
    expect(typeof fees.gasPrice).toBe("bigint");
    expect(typeof fees.maxPriorityFeePerGas).toBe("bigint");
  });

  it("ethers' own batches are served in order and counted one unit per call, a reverted call included", async () => {
    const { apiKey } = await createAccountWithKey({ daily: 1000, monthly: 0 });
    const ours = keyed(apiKey);
    const sent = sentCalls(ours);
    const before = await dayUsed(apiKey);
    const reverter = demo.reverter.address;
    const addresses = Array.from({ length: 20 }, (_, i) => `0x${String(i + 1).padStart(40, "0")}`);
    const [balances, code, reverted, logs, block] = await Promise.all([
      Promise.all(addresses.map((a) => ours.getBalance(a))),
      ours.getCode(reverter),
      ours.call({ to: reverter, data: id("alwaysReverts()").slice(0, 10) }).catch(failure),
      ours.getLogs({ address: demo.erc20.address, fromBlock: 0 }),
      ours.getBlock("latest"),
    ]);
    expect(balances).toEqual(await Promise.all(addresses.map((a) => direct.getBalance(a))));
    expect(code).toBe(await direct.getCode(reverter));
    expect(reverted).toMatchObject({ code: "CALL_EXCEPTION", reason: demo.reverter.reason });
    expect(plain(logs)).toEqual(plain(await direct.getLogs({ address: demo.erc20.address, fromBlock: 0 })));
    expect(block?.number).toBe(await direct.getBlockNumber());
    // ethers batched: some POST carried many calls (its first, the network check, goes alone).
    expect(Math.max(...sent.posts.map((p) => (Array.isArray(p) ? p.length : 1)))).toBeGreaterThanOrEqual(24);
    expect(sent.posts.length).toBeLessThan(sent.calls());
    // Every call ethers sent is one unit (the reverted call too), and the read that shows it.
    expect(await dayUsed(apiKey)).toBe(before + sent.calls() + 1);
  });

  it("a refused key reaches ethers as the HTTP error it is, the JSON-RPC error in its body", async () => {
    // With its network given, ethers sends the call at once (it would otherwise retry detection).
    const request = new FetchRequest(URL_ETH);
    request.setHeader("Authorization", "Bearer tg_nope");
    const ours = new JsonRpcProvider(request, 1, { staticNetwork: true });
    providers.push(ours);
    const error = await ours.getBlockNumber().catch((e) => e);
    expect(error).toMatchObject({ code: "SERVER_ERROR", response: { statusCode: 401 } });
    expect(error.response.bodyJson).toMatchObject({
      jsonrpc: "2.0",
      error: { code: -32000, data: { code: "invalid_api_key" } },
    });
  });
});
