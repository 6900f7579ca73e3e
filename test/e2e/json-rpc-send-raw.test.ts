// eth_sendRawTransaction on POST /rpc/{network} where the operator turned it on
// (RPC_SEND_RAW_TRANSACTION=true, a mesh of its own): a signed transaction is relayed, mined and
// charged its catalog price; /api/pricing lists it. Off (the default, the shared mesh) it is -32601,
// free: test/e2e/json-rpc.test.ts.
import { readFileSync } from "node:fs";
import { RPC_WRITE_METHODS } from "@tollgate/catalog";
import { type Mesh, meshAdmin } from "@tollgate/local";
import { createPublicClient, type Hex, http, parseEther } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { startOwnMesh } from "../support/own-mesh.ts";

const shared = inject("mesh");
const devnet = JSON.parse(readFileSync(shared.devnetFile, "utf8"));
const NODE = devnet.chains.ethereum.rpcUrl as string;
const node = createPublicClient({ transport: http(NODE, { retryCount: 0 }) });

let mesh: Mesh;
let apiKey: string;

beforeAll(async () => {
  mesh = await startOwnMesh({
    stateDir: shared.stateDir,
    namespace: `sendraw${process.pid}`,
    onLine: (s, l) => process.env.MESH_LOGS && process.stderr.write(`[${s}] ${l}\n`),
    env: {
      LOG_LEVEL: "warn",
      UPSTREAMS_ETHEREUM: NODE,
      UPSTREAMS_SEPOLIA: devnet.chains.sepolia.rpcUrl,
    },
    serviceEnv: {
      gateway: { RPC_SEND_RAW_TRANSACTION: "true" },
      "payment-verifier": sharedSettlementEnv("spare2"),
    },
  });
  const admin = meshAdmin(mesh);
  try {
    apiKey = (await admin.quickstart(`sendraw-${process.pid}`)).secret;
  } finally {
    admin.close();
  }
}, 240_000);

afterAll(async () => {
  await mesh?.stop();
});

async function rpc(body: unknown) {
  const res = await fetch(`${mesh.gatewayUrl}/rpc/ethereum`, {
    method: "POST",
    headers: { "content-type": "application/json", Authorization: `Bearer ${apiKey}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

describe("eth_sendRawTransaction, turned on", () => {
  it("relays a signed transaction to the node: mined, one unit counted; /api/pricing lists its price", async () => {
    // A wallet of this test's own, funded on the devnet (the node's own test method, at the boundary).
    const wallet = privateKeyToAccount(generatePrivateKey());
    await node.request({
      method: "anvil_setBalance" as never,
      params: [wallet.address, "0xde0b6b3a7640000"] as never,
    });
    const signed = await wallet.signTransaction({
      chainId: 1,
      to: wallet.address,
      value: 1n,
      nonce: 0,
      gas: 21_000n,
      maxFeePerGas: parseEther("0.0000001"),
      maxPriorityFeePerGas: 1n,
      type: "eip1559",
    });
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
});
