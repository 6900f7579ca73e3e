// eth_sendRawTransaction on POST /rpc/{network} where the operator turned it on
// (RPC_SEND_RAW_TRANSACTION=true, a mesh of its own): a signed transaction is relayed, mined and
// charged its catalog price; /api/pricing lists it; a node that takes it and never answers gets it
// once, and the client a 504, not charged. Off (the default, the shared mesh) it is -32601, free:
// test/e2e/json-rpc.test.ts.
import { readFileSync } from "node:fs";
import { RPC_WRITE_METHODS } from "@tollgate/catalog";
import { type Mesh, meshAdmin } from "@tollgate/local";
import { createPublicClient, type Hex, http, keccak256, parseEther } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CountingProxy } from "../support/counting-proxy.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { metricSumAt } from "../support/gateway.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { countedToday, SUITE_BURST } from "../support/quota.ts";
import { x402Payer } from "../support/x402.ts";

const shared = inject("mesh");
const devnet = JSON.parse(readFileSync(shared.devnetFile, "utf8"));
const NODE = devnet.chains.ethereum.rpcUrl as string;
const node = createPublicClient({ transport: http(NODE, { retryCount: 0 }) });

let mesh: Mesh;
let apiKey: string;
/** The mesh's two ethereum nodes: HTTP proxies in front of the devnet's node, counting what they get. */
let nodes: CountingProxy[] = [];

beforeAll(async () => {
  nodes = await Promise.all([new CountingProxy(NODE).listen(), new CountingProxy(NODE).listen()]);
  mesh = await startOwnMesh({
    stateDir: shared.stateDir,
    namespace: `sendraw${process.pid}`,
    onLine: (s, l) => process.env.MESH_LOGS && process.stderr.write(`[${s}] ${l}\n`),
    env: {
      LOG_LEVEL: "warn",
      UPSTREAMS_ETHEREUM: nodes.map((n) => n.url()).join(","),
      UPSTREAMS_SEPOLIA: devnet.chains.sepolia.rpcUrl,
    },
    serviceEnv: {
      gateway: { RPC_SEND_RAW_TRANSACTION: "true" },
      // Short attempts, several of them: a read would be tried again on the other node.
      "rpc-proxy": { UPSTREAM_TIMEOUT_MS: "1000", UPSTREAM_MAX_ATTEMPTS: "3" },
      "payment-verifier": sharedSettlementEnv("spare2"),
    },
  });
  await freshKey();
}, 240_000);

/** A key of its own for the test that calls it (its account has counted nothing yet): its account. */
async function freshKey(): Promise<string> {
  const admin = meshAdmin(mesh);
  try {
    // Room for the hedging test's sequential reads (the default burst guard would refuse them).
    const made = await admin.quickstart(`sendraw-${Math.random().toString(36).slice(2)}`, {
      burst: SUITE_BURST,
      daily: 100_000,
    });
    apiKey = made.secret;
    return made.account.id;
  } finally {
    admin.close();
  }
}

/** The account's calls counted today once they are `want` (support/quota.ts), in this mesh. */
const counted = (accountId: string, want: number) =>
  countedToday(accountId, want, {
    stateDir: mesh.stateDir,
    quotaMeterAddr: `127.0.0.1:${mesh.ports["quota-meter"].main}`,
  });

afterAll(async () => {
  await mesh?.stop();
  await Promise.all(nodes.map((n) => n.close()));
});

async function rpc(body: unknown) {
  const res = await fetch(`${mesh.gatewayUrl}/rpc/ethereum`, {
    method: "POST",
    headers: { "content-type": "application/json", Authorization: `Bearer ${apiKey}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

/** A wallet of a test's own, funded on the devnet (the node's own test method, at the boundary). */
async function fundedWallet(): Promise<PrivateKeyAccount> {
  const wallet = privateKeyToAccount(generatePrivateKey());
  await node.request({
    method: "anvil_setBalance" as never,
    params: [wallet.address, "0xde0b6b3a7640000"] as never,
  });
  return wallet;
}

/** A signed transfer of 1 wei to itself with `nonce`. */
const transfer = (wallet: PrivateKeyAccount, nonce: number) =>
  wallet.signTransaction({
    chainId: 1,
    to: wallet.address,
    value: 1n,
    nonce,
    gas: 21_000n,
    maxFeePerGas: parseEther("0.0000001"),
    maxPriorityFeePerGas: 1n,
    type: "eip1559",
  });

const sendRawBody = (id: number, signed: Hex) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "eth_sendRawTransaction", params: [signed] });

describe("eth_sendRawTransaction, turned on", () => {
  it("relays a signed transaction to the node: mined, one unit counted; /api/pricing lists its price", async () => {
    const wallet = await fundedWallet();
    const signed = await transfer(wallet, 0);
    const sent = await rpc({ jsonrpc: "2.0", id: 1, method: "eth_sendRawTransaction", params: [signed] });
    expect(sent.status).toBe(200);
    const hash = sent.body.result as Hex;
    expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
    const receipt = await node.waitForTransactionReceipt({ hash, timeout: 30_000 });
    expect(receipt.status).toBe("success");
    expect(Number(sent.headers.get("x-quota-day-used"))).toBe(1);
    // The same transaction again: the node's answer (known, or nonce too low) is passed on, charged.
    const again = await rpc({ jsonrpc: "2.0", id: 2, method: "eth_sendRawTransaction", params: [signed] });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(2);
    expect(Number(again.headers.get("x-quota-day-used"))).toBe(2);
    // Bad params: answered here, free.
    const bad = await rpc({ jsonrpc: "2.0", id: 3, method: "eth_sendRawTransaction", params: ["0x1"] });
    expect(bad.body).toMatchObject({ id: 3, error: { code: -32602 } });

    const pricing = (await (await fetch(`${mesh.gatewayUrl}/api/pricing`)).json()) as {
      data: { json_rpc: { methods: Array<{ method: string; price_usd: string }> } };
    };
    expect(pricing.data.json_rpc.methods).toContainEqual(
      expect.objectContaining({
        method: "eth_sendRawTransaction",
        price_usd: RPC_WRITE_METHODS.eth_sendRawTransaction.price,
      }),
    );
  });

  it("broadcasts nothing for a forged payment sent right after a genuine one as dear (issue 40, finding 3): no early node call for a write", async () => {
    const wallet = await fundedWallet();
    const payer = x402Payer(devnet, "payer3");
    const url = `${mesh.gatewayUrl}/rpc/ethereum`;
    const post = (body: string) => ({
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    // A genuine payment, settled, for a write (0.01 USD): the client's early call is then allowed
    // for calls priced up to that, reads; never for a write.
    const sent = payer.paid.length;
    const paid = await payer.fetch(url, post(sendRawBody(1, await transfer(wallet, 0))));
    expect(paid.status, await paid.clone().text()).toBe(200);
    expect(paid.headers.get("payment-response")).not.toBeNull();
    const settled = payer.paid[sent]?.signature ?? "";
    expect(settled).not.toBe("");
    // Right after it, the settled payment copied (refused: used) for the wallet's next transaction.
    const next = await transfer(wallet, 1);
    const forged = await fetch(url, {
      ...post(sendRawBody(2, next)),
      headers: { "content-type": "application/json", "PAYMENT-SIGNATURE": settled },
    });
    const refused = (await forged.json()) as { id: number; error: { data: { code: string } } };
    expect(forged.status, JSON.stringify(refused)).toBe(402);
    expect(refused).toMatchObject({ id: 2, error: { data: { code: "payment_invalid" } } });
    // A call after it through the same rpc-proxy, so a broadcast the forged one started is in.
    const count = await rpc({
      jsonrpc: "2.0",
      id: 3,
      method: "eth_getTransactionCount",
      params: [wallet.address, "pending"],
    });
    // The node never saw the transaction: the pending nonce is the paid one's successor.
    expect(count.body.result).toBe("0x1");
    expect(await node.getTransactionCount({ address: wallet.address, blockTag: "pending" })).toBe(1);
    expect(await node.request({ method: "eth_getTransactionByHash", params: [keccak256(next)] })).toBeNull();
  });

  it("sends a transaction to one node once: a node that takes it and never answers is a 504, not charged, not sent again", async () => {
    const wallet = await fundedWallet();
    const signed = await transfer(wallet, 0);
    const accountId = await freshKey();
    const marks = nodes.map((n) => n.requests.length);
    // Both nodes forward what they get to the devnet's node and withhold its answer.
    for (const n of nodes) n.mode = "swallow";
    let sent: Awaited<ReturnType<typeof rpc>>;
    try {
      sent = await rpc({ jsonrpc: "2.0", id: 7, method: "eth_sendRawTransaction", params: [signed] });
    } finally {
      for (const n of nodes) n.mode = "forward";
    }
    expect(sent.status, JSON.stringify(sent.body)).toBe(504);
    expect(sent.body).toMatchObject({ id: 7, error: { data: { code: "upstream_timeout" } } });
    const sends = nodes
      .flatMap((n, i) => n.since(marks[i]!))
      .filter((r) => r.methods.includes("eth_sendRawTransaction"));
    expect(sends).toHaveLength(1);
    // It reached the node: mined once, from the one send.
    const receipt = await node.waitForTransactionReceipt({ hash: keccak256(signed), timeout: 30_000 });
    expect(receipt.status).toBe("success");
    // Not charged: the day's count is back at nothing.
    expect(await counted(accountId, 0)).toBe(0);
    // And not sent again later either.
    expect(
      nodes.flatMap((n, i) => n.since(marks[i]!)).filter((r) => r.methods.includes("eth_sendRawTransaction")),
    ).toHaveLength(1);
  });

  it("charges a hedged read once: one node slow now and then, every read counts one unit however many nodes answered", async () => {
    const hedges = (outcome: string) =>
      metricSumAt(`http://127.0.0.1:${mesh.ports["rpc-proxy"].metrics}/metrics`, "rpc_proxy_hedges_total", {
        network: "ethereum",
        outcome,
      });
    const wonBefore = await hedges("won");
    const accountId = await freshKey();
    // One answer in 10 from the first node comes 300 ms late: the reads it holds are hedged.
    nodes[0]!.slowEvery = 10;
    const READS = 200;
    try {
      for (let i = 0; i < READS; i++) {
        const read = await rpc({ jsonrpc: "2.0", id: i, method: "eth_blockNumber", params: [] });
        expect(read.status).toBe(200);
        expect(read.body.result).toMatch(/^0x[0-9a-f]+$/);
      }
    } finally {
      nodes[0]!.slowEvery = 0;
    }
    expect(await hedges("won")).toBeGreaterThan(wonBefore);
    expect(await counted(accountId, READS)).toBe(READS);
  });
});
