// rpc-proxy's writes and hedged reads, against a real anvil node behind local HTTP proxies that can
// take a call and withhold the answer (a node that times out after accepting) or answer late now and
// then: a write reaches one node once; a slow read is hedged to the other node within the budget.
import { grpc } from "@tollgate/platform";
import { createPublicClient, type Hex, http, keccak256, parseGwei } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { eventually, metricSum, type Service, upstreamSuite } from "./helpers.ts";

const suite = upstreamSuite();
const proxy = () => suite.proxy();
const service = suite.service.bind(suite);

describe("rpc-proxy writes and hedged reads", () => {
  it("sends eth_sendRawTransaction to one node once: a node that takes it and never answers is upstream_timeout, not tried again here or elsewhere", async () => {
    // Both nodes take what they are sent and withhold the answer: any retry would reach one of them.
    const first = await proxy();
    const second = await proxy();
    const svc = await service({
      upstreams: { ethereum: [first.url(), second.url()] },
      upstream: { timeoutMs: 300, maxAttempts: 3, headPollMs: 60_000 },
    });
    first.mode = "swallow";
    second.mode = "swallow";
    const signed = await signedTransfer();
    const marks = [first.requests.length, second.requests.length];
    const failure = await svc.fail(
      "jsonRpc",
      { calls: [{ method: "eth_sendRawTransaction", params: [signed] }] },
      { deadlineMs: 5_000 },
    );
    expect(failure.code).toBe("upstream_timeout");
    expect(failure.grpcCode).toBe(grpc.status.DEADLINE_EXCEEDED);
    const sends = [...first.since(marks[0]!), ...second.since(marks[1]!)].filter((r) =>
      r.methods.includes("eth_sendRawTransaction"),
    );
    expect(sends).toHaveLength(1);
    // The one node that got it took it: it is in the pool, so the client checks by hash, not resends.
    const node = createPublicClient({ transport: http(suite.anvil.rpcUrl, { retryCount: 0 }) });
    expect(
      await node.request({ method: "eth_getTransactionByHash", params: [keccak256(signed)] }),
    ).not.toBeNull();
    // The nodes answer again: a read through the same pool is served in one round trip.
    first.mode = "forward";
    second.mode = "forward";
    const read = await svc.execute("jsonRpc", { calls: [{ method: "eth_blockNumber", params: [] }] });
    expect(read.roundTrips).toBe(1);
  });

  it("hedges a read its node is slow to answer: the other node answers, the slow attempt is cancelled, hedges stay within 10 % of reads", async () => {
    const slow = await proxy();
    const fast = await proxy();
    const svc = await service({
      upstreams: { ethereum: [slow.url(), fast.url()] },
      upstream: { headPollMs: 60_000, hedgeBudgetPercent: 10, hedgeQuantile: 90 },
    });
    // One answer in 20 from the slow node comes 300 ms late: above its own p90, so hedged.
    slow.slowEvery = 20;
    const reads = await readMany(svc, 400);
    expect(reads.every((r) => r.ok)).toBe(true);
    const text = await svc.metrics();
    const hedges = (outcome: string) =>
      metricSum(text, "rpc_proxy_hedges_total", { network: "ethereum", outcome });
    expect(slow.slowed).toBeGreaterThanOrEqual(5);
    expect(hedges("won")).toBeGreaterThanOrEqual(1);
    // Counted by the upstream that was slow: the one whose reads another node beat.
    expect(
      metricSum(text, "rpc_proxy_hedges_total", { upstream: "ethereum-0", outcome: "won" }),
    ).toBeGreaterThanOrEqual(1);
    // The budget: each hedge is one more node call, at most 10 % of the reads.
    expect(hedges("sent")).toBeLessThanOrEqual(40);
    // The late attempts the other node beat were cancelled: their connection closed unanswered.
    await eventually(() => slow.abandoned >= 1);
    // Each read is one answer to the caller, however many node calls it took.
    expect(reads.filter((r) => r.roundTrips === 2).length).toBe(hedges("sent"));
  });

  it("suppresses hedges over the budget: a 2 % budget holds while the slow node needs more", async () => {
    const slow = await proxy();
    const fast = await proxy();
    const svc = await service({
      upstreams: { ethereum: [slow.url(), fast.url()] },
      upstream: { headPollMs: 60_000, hedgeBudgetPercent: 2 },
    });
    slow.slowEvery = 12; // about 16 slow answers in 400 reads, below its p90 window share
    const reads = await readMany(svc, 400);
    expect(reads.every((r) => r.ok)).toBe(true);
    const text = await svc.metrics();
    const hedges = (outcome: string) =>
      metricSum(text, "rpc_proxy_hedges_total", { network: "ethereum", outcome });
    expect(hedges("sent")).toBeLessThanOrEqual(8);
    expect(hedges("suppressed")).toBeGreaterThanOrEqual(1);
  });

  it("never hedges a write: both nodes slow, a warm window and a full budget, the transaction is still sent once", async () => {
    const first = await proxy();
    const second = await proxy();
    const svc = await service({
      upstreams: { ethereum: [first.url(), second.url()] },
      upstream: { headPollMs: 60_000, hedgeBudgetPercent: 100 },
    });
    await readMany(svc, 40); // both windows hold 16+ answers: reads would now be hedged
    first.slowEvery = 1;
    second.slowEvery = 1;
    const signed = await signedTransfer();
    const marks = [first.requests.length, second.requests.length];
    const sent = await svc.execute("jsonRpc", {
      calls: [{ method: "eth_sendRawTransaction", params: [signed] }],
    });
    expect(sent.data).toEqual([{ result: keccak256(signed) }]);
    expect(sent.roundTrips).toBe(1);
    const sends = [...first.since(marks[0]!), ...second.since(marks[1]!)].filter((r) =>
      r.methods.includes("eth_sendRawTransaction"),
    );
    expect(sends).toHaveLength(1);
  });
});

/** A signed 1-wei transfer from a fresh wallet funded on the test's anvil (the node's own test method). */
async function signedTransfer(): Promise<Hex> {
  const wallet = privateKeyToAccount(generatePrivateKey());
  const node = createPublicClient({ transport: http(suite.anvil.rpcUrl, { retryCount: 0 }) });
  await node.request({
    method: "anvil_setBalance" as never,
    params: [wallet.address, "0xde0b6b3a7640000"] as never,
  });
  return wallet.signTransaction({
    chainId: 1,
    to: wallet.address,
    value: 1n,
    nonce: 0,
    gas: 21_000n,
    maxFeePerGas: parseGwei("100"),
    maxPriorityFeePerGas: 1n,
    type: "eip1559",
  });
}

/** `count` eth_blockNumber reads through the relay, one after another. */
async function readMany(svc: Service, count: number): Promise<{ ok: boolean; roundTrips: number }[]> {
  const out: { ok: boolean; roundTrips: number }[] = [];
  for (let i = 0; i < count; i++) {
    const r = await svc.execute("jsonRpc", { calls: [{ method: "eth_blockNumber", params: [] }] });
    const [answer] = r.data as unknown as [{ result?: string }];
    out.push({ ok: /^0x[0-9a-f]+$/.test(answer.result ?? ""), roundTrips: r.roundTrips });
  }
  return out;
}
