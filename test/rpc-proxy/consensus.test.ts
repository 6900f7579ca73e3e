// rpc-proxy's consistent head and quorum reads (issue 44, parts 2 and 3), against three real anvil
// nodes of chain 1 behind counting proxies: one is made to disagree (anvil_setBalance on it alone),
// or the nodes stand at different heights (anvil_mine on some).
import type { AnvilNode } from "@tollgate/devnet/anvil";
import { describe, expect, it } from "vitest";
import type { Recorded } from "../support/counting-proxy.ts";
import {
  type CountingProxy,
  eventually,
  type LogLine,
  memoryLogger,
  metricValue,
  nodeRpc,
  type Service,
  upstreamSuite,
} from "./helpers.ts";

const suite = upstreamSuite();
/** Someone whose balance the test sets on each node as it likes. */
const ACCOUNT = "0x00000000000000000000000000000000000c0ffe";

const rpc = nodeRpc;

const setBalance = (node: AnvilNode, wei: bigint) =>
  rpc(node, "anvil_setBalance", [ACCOUNT, `0x${wei.toString(16)}`]);
const mine = (node: AnvilNode, blocks: number) => rpc(node, "anvil_mine", [`0x${blocks.toString(16)}`]);

/** rpc-proxy's settings but its upstreams (the nodes'), and CONSENSUS_ETHEREUM. */
type Setup = Omit<Parameters<typeof suite.service>[0], "upstreams" | "consensus"> & { consensus?: string };

/** Three fresh nodes, each behind a counting proxy, and rpc-proxy over them with `env` settings. */
async function threeNodes(
  patch: Setup,
  logs: LogLine[] = [],
): Promise<{ nodes: AnvilNode[]; proxies: CountingProxy[]; svc: Service }> {
  const nodes = await Promise.all([suite.node(), suite.node(), suite.node()]);
  return { nodes, ...(await over(nodes, patch, logs)) };
}

async function over(
  nodes: AnvilNode[],
  patch: Setup,
  logs: LogLine[],
): Promise<{ proxies: CountingProxy[]; svc: Service }> {
  const proxies = await Promise.all(nodes.map((n) => suite.proxy(n.rpcUrl)));
  const { consensus, ...rest } = patch;
  const svc = await suite.service(
    { ...rest, upstreams: { ethereum: proxies.map((p) => p.url()) }, consensus: { ethereum: consensus } },
    memoryLogger(logs),
  );
  return { proxies, svc };
}

const sent = (proxy: CountingProxy, mark: number, method: string): Recorded[] =>
  proxy.since(mark).filter((r) => r.methods.includes(method));

describe("rpc-proxy quorum reads (CONSENSUS_<NETWORK>)", () => {
  it("2of3: serves the majority's balance, REST and /rpc alike, and cordons the node that disagreed", async () => {
    const logs: LogLine[] = [];
    const { nodes, proxies, svc } = await threeNodes(
      { consensus: "eth_getBalance,eth_call:2of3", upstream: { headPollMs: 60_000, cordonMs: 60_000 } },
      logs,
    );
    await Promise.all(nodes.map((n, i) => setBalance(n, i === 2 ? 666n : 1_000n)));
    const liar = proxies[2]!;

    const rest = await svc.execute("balance", { address: ACCOUNT });
    expect(rest.data.balance).toBe("1000");
    // Each node of the quorum was asked: three node calls for the one call.
    expect(rest.roundTrips).toBe(3);
    const text = () => svc.metrics();
    await eventually(
      async () =>
        metricValue(await text(), "rpc_proxy_upstream_cordoned", {
          upstream: "ethereum-2",
          reason: "disagreed",
        }) === 1,
    );
    expect(
      metricValue(await text(), "rpc_proxy_upstream_disagreements_total", { upstream: "ethereum-2" }),
    ).toBe(1);
    expect(metricValue(await text(), "rpc_proxy_quorum_total", { outcome: "agreed" })).toBe(1);
    // The log line names both answers by hash, never the answers themselves.
    const line = logs.find((l) => l.msg === "upstream disagreed with the quorum; cordoned");
    expect(line?.obj).toMatchObject({
      upstream: "ethereum-2",
      answer: expect.stringMatching(/^[0-9a-f]{16}$/),
      quorum: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
    const { answer, quorum, agreed } = line!.obj as { answer: string; quorum: string; agreed: string[] };
    expect(answer).not.toBe(quorum);
    expect([...agreed].sort()).toEqual(["ethereum-0", "ethereum-1"]);
    expect(JSON.stringify(line)).not.toContain("0x29a"); // 666 wei, the liar's answer

    // Cordoned: the liar is asked nothing more, and 2 of the 2 left still agree.
    const mark = liar.requests.length;
    for (let i = 0; i < 10; i++) {
      const relayed = await svc.execute("jsonRpc", {
        calls: [{ method: "eth_getBalance", params: [ACCOUNT, "latest"] }],
      });
      expect(relayed.data).toEqual([{ result: "0x3e8" }]);
      expect((await svc.execute("balance", { address: ACCOUNT })).data.balance).toBe("1000");
    }
    expect(liar.since(mark)).toHaveLength(0);
    const eth = (await svc.listNetworks()).networks.find((n) => n.name === "ethereum")!;
    expect(eth.upstreams.map((u) => u.healthy)).toEqual([true, true, false]);
  });

  it("2of3 with two nodes disagreeing: upstream_disagreement, no node cordoned, other methods unaffected", async () => {
    const logs: LogLine[] = [];
    const { nodes, svc } = await threeNodes(
      { consensus: "eth_getBalance:2of3", upstream: { headPollMs: 60_000 } },
      logs,
    );
    await Promise.all(nodes.map((n, i) => setBalance(n, 1_000n + BigInt(i))));
    for (const call of [
      () => svc.fail("balance", { address: ACCOUNT }),
      () => svc.fail("jsonRpc", { calls: [{ method: "eth_getBalance", params: [ACCOUNT, "latest"] }] }),
    ]) {
      const failure = await call();
      expect(failure.code).toBe("upstream_disagreement");
      // A free refusal: it names no block and no answer.
      expect(failure.message).not.toMatch(/0x|1000|1001|1002/);
    }
    const text = await svc.metrics();
    expect(metricValue(text, "rpc_proxy_quorum_total", { outcome: "disagreement" })).toBe(2);
    expect(text).not.toMatch(/rpc_proxy_upstream_disagreements_total\{[^}]*\} [1-9]/);
    const split = logs.find((l) => l.msg?.startsWith("no quorum"));
    expect(split?.obj).toMatchObject({ answers: [{}, {}, {}] });
    // Methods outside the quorum are served by one node, as ever.
    expect((await svc.execute("chainId", {})).data.chain_id).toBe("0x1");
  });

  it("refuses at start a quorum it could not keep: more nodes than configured, no majority, a write, eth_blockNumber", async () => {
    const node = await suite.proxy();
    const upstreams = { ethereum: [node.url(), node.url(), node.url()] };
    for (const [value, refusal] of [
      ["eth_call:4of5", /CONSENSUS_ETHEREUM.*5 upstreams/],
      ["eth_call:2of4", /more than half/],
      ["eth_call:1of2", /more than half/],
      ["eth_call:1of1", /more than half/],
      ["eth_sendRawTransaction:2of3", /not a read method/],
      ["eth_blockNumber:2of3", /consistent head/],
      ["eth_call 2of3", /must read/],
    ] as const) {
      await expect(suite.service({ upstreams, consensus: { ethereum: value } }), value).rejects.toThrow(
        refusal,
      );
    }
  });
});

describe("rpc-proxy consistent head", () => {
  it("eth_blockNumber never goes backwards over nodes at different heights, and `latest` reads are pinned to the head a majority reached", async () => {
    const nodes = await Promise.all([suite.node(), suite.node(), suite.node()]);
    await mine(nodes[0]!, 12);
    await mine(nodes[1]!, 10);
    await mine(nodes[2]!, 8); // behind the majority's head, within the lag limit
    const { proxies, svc } = await over(nodes, { upstream: { headPollMs: 50, maxLagBlocks: 5 } }, []);
    const behind = proxies[2]!;
    // Two of three reached block 10: the consistent head.
    await eventually(async () => metricValue(await svc.metrics(), "rpc_proxy_consensus_head", {}) === 10);

    let last = 0n;
    const mark = behind.requests.length;
    for (let i = 0; i < 300; i++) {
      // The chain moves on under the calls, each node at its own pace.
      if (i % 30 === 0) await Promise.all(nodes.map((n, j) => mine(n, 3 - j)));
      const [blockNumber] = (
        await svc.execute("jsonRpc", {
          calls: [
            { method: "eth_blockNumber", params: [] },
            { method: "eth_getBalance", params: [ACCOUNT, "latest"] },
          ],
        })
      ).data as unknown as [{ result: string }];
      const rest = BigInt((await svc.execute("blockNumber", {})).data.block_number as string);
      const relayed = BigInt(blockNumber.result);
      expect(relayed).toBeGreaterThanOrEqual(last);
      expect(rest).toBeGreaterThanOrEqual(relayed);
      last = rest;
    }
    expect(last).toBeGreaterThan(10n);
    // A `latest` read went out as the pinned block number, never to the node behind the head.
    const reads = proxies.flatMap((p, i) => sent(p, i === 2 ? mark : 0, "eth_getBalance"));
    expect(reads.length).toBeGreaterThanOrEqual(300);
    for (const r of reads) {
      const call = (r.body as { method: string; params: string[] }[]).find(
        (c) => c.method === "eth_getBalance",
      );
      expect(call?.params[1]).toMatch(/^0x[0-9a-f]+$/);
    }
    expect(sent(behind, mark, "eth_getBalance")).toHaveLength(0);
  });

  it("takes a lagging, then a stalled node out of rotation, with its reason in rpc_proxy_upstream_cordoned", async () => {
    const nodes = await Promise.all([suite.node(), suite.node(), suite.node()]);
    const { svc } = await over(nodes, { upstream: { headPollMs: 50, maxLagBlocks: 5, stallMs: 500 } }, []);
    const reason = async (r: string) =>
      metricValue(await svc.metrics(), "rpc_proxy_upstream_cordoned", { upstream: "ethereum-2", reason: r });
    // Two nodes move 20 blocks ahead: the third is over the lag limit.
    await Promise.all([mine(nodes[0]!, 20), mine(nodes[1]!, 20)]);
    await eventually(async () => (await reason("lagging")) === 1);
    // It catches up to 1 block behind (within the limit), then stops while the others move on.
    await mine(nodes[2]!, 19);
    await eventually(async () => (await reason("lagging")) === 0);
    await Promise.all([mine(nodes[0]!, 1), mine(nodes[1]!, 1)]);
    await eventually(async () => (await reason("stalled")) === 1, 10_000);
    const eth = (await svc.listNetworks()).networks.find((n) => n.name === "ethereum")!;
    expect(eth.upstreams[2]!.healthy).toBe(false);
    // Its head moves again: back in rotation.
    await mine(nodes[2]!, 2);
    await eventually(async () => (await reason("stalled")) === 0 && (await reason("lagging")) === 0);
    expect(metricValue(await svc.metrics(), "rpc_proxy_upstream_healthy", { upstream: "ethereum-2" })).toBe(
      1,
    );
  });
});
