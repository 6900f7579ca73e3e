// rpc-proxy's integrity checks and per-upstream budgets (issue 44, parts 4 and 5). Three upstreams
// are counting proxies in front of one real anvil, so they serve the same chain (the same block
// hashes); the lying node is one of those proxies rewriting the anvil's answer: a stand-in at the
// node boundary (no real client lies on demand), said so in each title.

import { isCharged } from "@tollgate/catalog";
import type { AnvilNode } from "@tollgate/devnet/anvil";
import { describe, expect, it } from "vitest";
import {
  type CountingProxy,
  eventually,
  type LogLine,
  memoryLogger,
  metricSum,
  metricValue,
  nodeRpc,
  type Service,
  upstreamSuite,
} from "./helpers.ts";

const suite = upstreamSuite();
const FAKE_HASH = `0x${"ab".repeat(32)}`;

const rpc = nodeRpc;

const hex = (n: number) => `0x${n.toString(16)}`;
const mine = (node: AnvilNode, blocks: number) => rpc(node, "anvil_mine", [hex(blocks)]);
const blockHash = async (node: AnvilNode, n: number) =>
  ((await rpc(node, "eth_getBlockByNumber", [hex(n), false])) as { hash: string }).hash;

/** A fresh anvil `blocks` high, three counting proxies in front of it, rpc-proxy over them. */
async function threeOverOne(
  blocks: number,
  logs: LogLine[] = [],
): Promise<{ node: AnvilNode; proxies: CountingProxy[]; svc: Service }> {
  const node = await suite.node();
  if (blocks > 0) await mine(node, blocks);
  const proxies = await Promise.all([0, 1, 2].map(() => suite.proxy(node.rpcUrl)));
  const svc = await suite.service(
    {
      upstreams: { ethereum: proxies.map((p) => p.url()) },
      // Hedging off: each read goes to one node, in rotation (0, 1, 2, 0…).
      upstream: { headPollMs: 50, cordonMs: 60_000, hedgeBudgetPercent: 0 },
    },
    memoryLogger(logs),
  );
  await eventually(
    async () => metricValue(await svc.metrics(), "rpc_proxy_consensus_head", {}) === blocks,
    15_000,
  );
  return { node, proxies, svc };
}

/** Requests after `mark` other than the background head polls. */
const served = (proxy: CountingProxy, mark: number) =>
  proxy.since(mark).filter((r) => !r.methods.includes("eth_blockNumber"));

describe("rpc-proxy integrity checks", () => {
  it("a block whose parentHash breaks the chain (a lying proxy in front of anvil) is not served: the node is cordoned, another answers", async () => {
    const logs: LogLine[] = [];
    const { node, proxies, svc } = await threeOverOne(100, logs);
    const liar = proxies[2]!;
    liar.alter = (call, result) =>
      call.method === "eth_getBlockByNumber" && call.params[0] === "0xb"
        ? { ...(result as object), parentHash: FAKE_HASH }
        : undefined;
    const [ten, eleven] = [await blockHash(node, 10), await blockHash(node, 11)];

    // Block 10 as each node gives it: the chain rpc-proxy has seen.
    for (let i = 0; i < 3; i++) expect((await svc.execute("block", { number: "0xa" })).data.hash).toBe(ten);
    // Block 11 from each node in turn: the liar's answer is caught and asked again elsewhere.
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await svc.execute("block", { number: "0xb" }));
    expect(liar.altered).toBe(1);
    for (const a of answers) expect(a.data).toMatchObject({ hash: eleven, parent_hash: ten });
    // The caught read cost two node calls, Tollgate's: the caller got one answer.
    expect(answers.map((a) => a.roundTrips).sort()).toEqual([1, 1, 2]);

    const text = await svc.metrics();
    expect(
      metricValue(text, "rpc_proxy_upstream_integrity_failures_total", {
        upstream: "ethereum-2",
        check: "parent_hash",
      }),
    ).toBe(1);
    expect(metricSum(text, "rpc_proxy_upstream_integrity_failures_total", {})).toBe(1);
    expect(
      metricValue(text, "rpc_proxy_upstream_cordoned", { upstream: "ethereum-2", reason: "integrity" }),
    ).toBe(1);
    const line = logs.find((l) => l.msg?.startsWith("upstream failed an integrity check"));
    expect(line?.obj).toMatchObject({
      upstream: "ethereum-2",
      check: "parent_hash",
      method: "eth_getBlockByNumber",
      block: 10,
      expected: ten,
      got: FAKE_HASH,
    });

    // Cordoned: it is asked nothing more, and the other two serve.
    const mark = liar.requests.length;
    for (let i = 0; i < 6; i++) expect((await svc.execute("block", { number: "0xc" })).roundTrips).toBe(1);
    expect(served(liar, mark)).toHaveLength(0);
    const eth = (await svc.listNetworks()).networks.find((n) => n.name === "ethereum")!;
    expect(eth.upstreams.map((u) => u.healthy)).toEqual([true, true, false]);
  });

  it("a log whose blockHash is not the block's (a lying proxy in front of anvil) is not served: the node is cordoned, another answers", async () => {
    const node = await suite.node();
    const [from] = (await rpc(node, "eth_accounts", [])) as [string];
    // A contract creation whose init code emits one LOG0 (PUSH1 0 PUSH1 0 LOG0 STOP).
    const sent = await rpc(node, "eth_sendTransaction", [{ from, data: "0x60006000a000" }]);
    let receipt: { blockNumber: string } | null = null;
    await eventually(async () => {
      receipt = (await rpc(node, "eth_getTransactionReceipt", [sent])) as typeof receipt;
      return receipt !== null;
    });
    const logged = Number(receipt!.blockNumber);
    await mine(node, 99);
    const height = Number(await rpc(node, "eth_blockNumber", []));
    const proxies = await Promise.all([0, 1, 2].map(() => suite.proxy(node.rpcUrl)));
    const svc = await suite.service({
      upstreams: { ethereum: proxies.map((p) => p.url()) },
      upstream: { headPollMs: 50, hedgeBudgetPercent: 0 },
    });
    await eventually(
      async () => metricValue(await svc.metrics(), "rpc_proxy_consensus_head", {}) === height,
      15_000,
    );
    const liar = proxies[1]!;
    liar.alter = (call, result) =>
      call.method === "eth_getLogs"
        ? (result as object[]).map((log) => ({ ...log, blockHash: FAKE_HASH }))
        : undefined;
    const real = await blockHash(node, logged);

    for (let i = 0; i < 3; i++) await svc.execute("block", { number: hex(logged) });
    const filter = { fromBlock: hex(logged), toBlock: hex(logged) };
    for (let i = 0; i < 3; i++) {
      const { data } = await svc.execute("jsonRpc", { calls: [{ method: "eth_getLogs", params: [filter] }] });
      const [answer] = data as unknown as [{ result: { blockHash: string }[] }];
      expect(answer.result).toHaveLength(1);
      expect(answer.result[0]!.blockHash).toBe(real);
    }
    expect(liar.altered).toBe(1);
    const text = await svc.metrics();
    expect(
      metricValue(text, "rpc_proxy_upstream_integrity_failures_total", {
        upstream: "ethereum-1",
        check: "log_block_hash",
      }),
    ).toBe(1);
    expect(
      metricValue(text, "rpc_proxy_upstream_cordoned", { upstream: "ethereum-1", reason: "integrity" }),
    ).toBe(1);
  });

  it("a reorg near the head is not a lie: the new blocks are served and no node is cordoned", async () => {
    const { node, svc } = await threeOverOne(30);
    const before = await blockHash(node, 29);
    for (let n = 25; n <= 30; n++) for (let i = 0; i < 3; i++) await svc.execute("block", { number: hex(n) });
    // Blocks 28 to 30 replaced by others.
    await rpc(node, "anvil_reorg", [3, []]);
    const after = await blockHash(node, 29);
    expect(after).not.toBe(before);
    for (let n = 27; n <= 30; n++) {
      for (let i = 0; i < 3; i++) {
        const { data } = await svc.execute("block", { number: hex(n) });
        expect(data.hash).toBe(await blockHash(node, n));
      }
    }
    const text = await svc.metrics();
    expect(metricSum(text, "rpc_proxy_upstream_integrity_failures_total", {})).toBe(0);
    const eth = (await svc.listNetworks()).networks.find((n) => n.name === "ethereum")!;
    expect(eth.upstreams.map((u) => u.healthy)).toEqual([true, true, true]);
  });

  it("a receipt for another transaction, or a balance that is no quantity (a lying proxy in front of anvil), is not served", async () => {
    const { node, proxies, svc } = await threeOverOne(0);
    const [from] = (await rpc(node, "eth_accounts", [])) as [string];
    const tx = (await rpc(node, "eth_sendTransaction", [{ from, to: from, value: "0x1" }])) as string;
    const other = (await rpc(node, "eth_sendTransaction", [{ from, to: from, value: "0x2" }])) as string;
    const otherReceipt = await rpc(node, "eth_getTransactionReceipt", [other]);
    proxies[0]!.alter = (call) => (call.method === "eth_getTransactionReceipt" ? otherReceipt : undefined);
    proxies[1]!.alter = (call) => (call.method === "eth_getBalance" ? "lots" : undefined);
    for (let i = 0; i < 3; i++) {
      const { data } = await svc.execute("jsonRpc", {
        calls: [{ method: "eth_getTransactionReceipt", params: [tx] }],
      });
      expect((data as unknown as [{ result: { transactionHash: string } }])[0].result.transactionHash).toBe(
        tx,
      );
    }
    for (let i = 0; i < 3; i++) {
      const { data } = await svc.execute("balance", { address: from });
      expect(data.balance).toMatch(/^\d+$/);
    }
    const text = await svc.metrics();
    const failures = (upstream: string, check: string) =>
      metricValue(text, "rpc_proxy_upstream_integrity_failures_total", { upstream, check });
    expect(failures("ethereum-0", "answer_mismatch")).toBe(1);
    expect(failures("ethereum-1", "shape")).toBe(1);
  });
});

describe("rpc-proxy per-upstream budgets (UPSTREAM_LIMITS_<NETWORK>)", () => {
  it("an upstream limited to 5 requests/s gets at most its budget; the rest go to the other", async () => {
    const [limited, open] = [await suite.proxy(), await suite.proxy()];
    const svc = await suite.service({
      upstreams: { ethereum: [limited.url(), open.url()] },
      limits: { ethereum: "5/s,-" },
      upstream: { headPollMs: 60_000, hedgeBudgetPercent: 0 },
    });
    const marks = [limited.requests.length, open.requests.length];
    const started = performance.now();
    for (let i = 0; i < 80; i++) await svc.execute("chainId", {});
    const seconds = (performance.now() - started) / 1000;
    const toLimited = limited.since(marks[0]!).length;
    // The bucket holds one second's calls (5, less the start's head poll) and refills at 5/s.
    expect(toLimited).toBeLessThanOrEqual(Math.floor(5 + 5 * seconds));
    expect(toLimited).toBeGreaterThanOrEqual(1);
    expect(toLimited + open.since(marks[1]!).length).toBe(80);
    const skips = metricSum(await svc.metrics(), "rpc_proxy_upstream_budget_skips_total", {
      upstream: "ethereum-0",
      limit: "rate",
    });
    expect(skips).toBeGreaterThan(0);
  });

  it("every upstream out of budget: 503 upstream_unavailable, no node asked, not charged", async () => {
    const [a, b] = [await suite.proxy(), await suite.proxy()];
    const svc = await suite.service({
      upstreams: { ethereum: [a.url(), b.url()] },
      // Two calls a month each: the start's head poll takes one, one read each is left.
      limits: { ethereum: "1000/s+2/month,2/month" },
      upstream: { headPollMs: 60_000, hedgeBudgetPercent: 0 },
    });
    for (let i = 0; i < 2; i++) expect((await svc.execute("chainId", {})).data.chain_id).toBe("0x1");
    const marks = [a.requests.length, b.requests.length];
    const failure = await svc.fail("chainId", {});
    expect(failure.code).toBe("upstream_unavailable");
    expect(isCharged("upstream_unavailable")).toBe(false);
    expect(a.since(marks[0]!).length + b.since(marks[1]!).length).toBe(0);
    const text = await svc.metrics();
    expect(
      metricValue(text, "rpc_proxy_upstream_budget_skips_total", { upstream: "ethereum-1", limit: "month" }),
    ).toBe(1);
  });

  it("refuses at start limits it cannot read", async () => {
    const node = await suite.proxy();
    const upstreams = { ethereum: [node.url(), node.url()] };
    for (const value of ["5/s,5/s,5/s", "5 per second", "0/s", "5/month+5/s"]) {
      await expect(suite.service({ upstreams, limits: { ethereum: value } }), value).rejects.toThrow(
        /UPSTREAM_LIMITS_ETHEREUM/,
      );
    }
  });
});
