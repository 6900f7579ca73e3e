// Issue 34, findings 5 and 6, on a mesh of its own: what a refusal after Verify costs Tollgate and
// what it shows the client. A payer reusing one authorization on a request rpc-proxy refuses leaves
// a bounded number of ledger rows, not one per attempt; no refusal names the chain head (a free read
// of block-number); and no client-facing answer carries a node URL's key, from payment-verifier (the
// x402-batch deposit simulation quoting the settlement chain's URL) or from rpc-proxy (a node's
// error quoting its own URL). The nodes are real anvil chains; the two keyed URLs lead to a proxy in
// front of them (a test double at the provider boundary) that answers chosen calls with the
// JSON-RPC error a provider would.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { type Mesh, meshAdmin, startMesh } from "@tollgate/local";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { RELEASED_PER_PAYER_PER_HOUR } from "../../services/payment-verifier/src/core/events.ts";
import { CountingProxy } from "../support/counting-proxy.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { until } from "../support/eventually.ts";
import { TEST_MESH_ENV } from "../support/own-mesh.ts";
import { createTestDatabase, type TestDatabase } from "../support/postgres.ts";
import { type DevnetInfo, x402Payer } from "../support/x402.ts";
import { batchPayer } from "../support/x402-batch.ts";

const devnet = JSON.parse(readFileSync(inject("mesh").devnetFile, "utf8")) as DevnetInfo & {
  chains: Record<string, { rpcUrl: string; contracts?: Record<string, string> }>;
};
/** Released calls the ledger keeps per payer per hour in this mesh. */
const PER_HOUR = 5;
/** Provider keys in the node URLs' paths, as hosted providers put them. */
const SETTLEMENT_KEY = `settle${randomBytes(12).toString("hex")}`;
const NODE_KEY = `node${randomBytes(12).toString("hex")}`;
const ESCROW = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003".toLowerCase();

let database: TestDatabase;
let mesh: Mesh;
let settlementNode: CountingProxy;
let sepoliaNode: CountingProxy;
let apiKey: string;

beforeAll(async () => {
  database = await createTestDatabase("free-refusals");
  settlementNode = await new CountingProxy(devnet.chains.settlement!.rpcUrl).listen();
  sepoliaNode = await new CountingProxy(devnet.chains.sepolia!.rpcUrl).listen();
  mesh = await startMesh({
    stateDir: inject("mesh").stateDir,
    namespace: `freerefusals${process.pid}`,
    onLine: (s, l) => process.env.MESH_LOGS && process.stderr.write(`[${s}] ${l}\n`),
    env: {
      ...TEST_MESH_ENV,
      LOG_LEVEL: "warn",
      DATABASE_URL: database.url,
      UPSTREAMS_ETHEREUM: devnet.chains.ethereum!.rpcUrl,
      UPSTREAMS_SEPOLIA: sepoliaNode.url(`/v3/${NODE_KEY}`),
    },
    serviceEnv: {
      "payment-verifier": {
        ...sharedSettlementEnv("spare3"),
        X402_SETTLEMENT_RPC_URL: settlementNode.url(`/v2/${SETTLEMENT_KEY}`),
        PAYMENT_SCHEMES: "exact,x402-batch",
      },
      "settlement-worker": { LEDGER_RELEASED_PER_HOUR: String(PER_HOUR) },
    },
  });
  const admin = meshAdmin(mesh);
  try {
    apiKey = (await admin.quickstart(`free-refusals-${process.pid}`)).secret;
  } finally {
    admin.close();
  }
}, 240_000);

afterAll(async () => {
  await mesh?.stop();
  await settlementNode?.close();
  await sepoliaNode?.close();
  await database?.drop();
});

/** Every number a text names, hex or decimal. */
const numbersIn = (text: string) => (text.match(/0x[0-9a-f]+|\d+/gi) ?? []).map((n) => BigInt(n));

/** The settlement worker's ledger events so far for `outcome`, every result together. */
async function ledgerEvents(outcome: string): Promise<number> {
  const text = await (
    await fetch(`http://127.0.0.1:${mesh.ports["settlement-worker"].metrics}/metrics`)
  ).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("settlement_ledger_events_total{") && l.includes(`outcome="${outcome}"`))
    .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
}

/** Rows naming `payer` in every table of the database that has a payer column. */
async function rowsOf(payer: string): Promise<number> {
  const tables = await database.query<{ table_name: string }>(
    "select table_name from information_schema.columns where table_schema = 'public' and column_name = 'payer'",
  );
  let rows = 0;
  for (const { table_name } of tables) {
    const [r] = await database.query<{ n: number }>(
      `select count(*)::int as n from "${table_name}" where lower(payer) = $1`,
      [payer.toLowerCase()],
    );
    rows += r?.n ?? 0;
  }
  return rows;
}

/** Everything a client sees of an answer: status line's body and every header, PAYMENT-REQUIRED decoded. */
async function seen(res: Response): Promise<string> {
  const parts = [await res.text()];
  for (const [name, value] of res.headers) {
    parts.push(`${name}: ${value}`);
    if (name === "payment-required" || name === "payment-response")
      parts.push(Buffer.from(value, "base64").toString("utf8"));
  }
  return parts.join("\n");
}

describe("refusals after Verify cost nothing lasting and show nothing secret", () => {
  it("a payer reusing one authorization on a request refused after Verify leaves at most the bound of ledger rows", async () => {
    const payer = x402Payer(devnet, "payer2");
    const url = `${mesh.gatewayUrl}/api/chain/events?network=ethereum&from_block=0xffffffff`;
    const before = await ledgerEvents("released");
    const startHour = Math.floor(Date.now() / 3_600_000);
    const first = await payer.fetch(url);
    expect(first.status).toBe(400);
    const signature = payer.paid[0]?.signature;
    expect(signature).toBeTruthy();
    const ATTEMPTS = 60;
    for (let i = 1; i < ATTEMPTS; i++) {
      const again = await fetch(url, { headers: { "payment-signature": signature! } });
      // Verified, refused by rpc-proxy, released: the same authorization buys the next attempt.
      expect(again.status).toBe(400);
      await again.body?.cancel();
    }
    // Every release payment-verifier published (at most RELEASED_PER_PAYER_PER_HOUR of this payer's
    // in the hour: the rest only counted there) reached the ledger's consumer, kept or only counted.
    const published = Math.min(ATTEMPTS, RELEASED_PER_PAYER_PER_HOUR);
    await until(
      "the released events reached the ledger",
      async () => (await ledgerEvents("released")) - before >= published,
      30_000,
      200,
    );
    const hours = Math.floor(Date.now() / 3_600_000) - startHour + 1;
    // At most the kept samples and one counter row per hour, not one row per attempt.
    expect(await rowsOf(payer.address)).toBeLessThanOrEqual((PER_HOUR + 1) * hours);
  });

  it("a log range wholly past the head is refused without naming the head", async () => {
    const answer = await fetch(devnet.chains.ethereum!.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    });
    const head = BigInt(((await answer.json()) as { result: string }).result);
    for (const query of [
      `from_block=${`0x${(head + 1000n).toString(16)}`}&to_block=${`0x${(head + 2000n).toString(16)}`}`,
      "from_block=latest&to_block=0x0",
    ]) {
      const res = await fetch(`${mesh.gatewayUrl}/api/chain/events?network=ethereum&${query}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(res.status, query).toBe(400);
      // The head the refusal was decided against (a block or two may have been mined since).
      const named = numbersIn(body.error.message);
      for (const n of [head - 2n, head - 1n, head, head + 1n, head + 2n])
        expect(named, `${query}: ${body.error.message}`).not.toContain(n);
    }
  });

  it("the x402-batch deposit simulation's error, quoting the settlement chain's URL, reaches the client without its key", async () => {
    // The node answers the deposit's simulation (a long eth_call to the escrow) with an error viem
    // does not classify (a pruned node's), so viem's message, with the URL, is the refusal's reason.
    settlementNode.refuse = ({ method, params }) => {
      const call = params[0] as { to?: string; data?: string; input?: string } | undefined;
      const data = call?.data ?? call?.input ?? "";
      return method === "eth_call" && call?.to?.toLowerCase() === ESCROW && data.length > 200
        ? { code: -32000, message: "missing trie node" }
        : undefined;
    };
    try {
      const payer = batchPayer(devnet, "payer3");
      const res = await payer.fetch(`${mesh.gatewayUrl}/api/chain/block-number?network=ethereum`);
      expect(payer.signatures.length).toBeGreaterThan(0);
      expect(res.status).toBe(402);
      const text = await seen(res);
      // The path the key could take: the simulation's failure is the reason.
      expect(text).toContain("deposit_simulation_failed");
      expect(text).not.toContain(SETTLEMENT_KEY);
    } finally {
      settlementNode.refuse = undefined;
    }
  });

  it("a node's error quoting its own URL reaches the client without the key", async () => {
    sepoliaNode.refuse = ({ method }) =>
      method === "eth_getBalance"
        ? { code: -32000, message: `project not allowed at ${sepoliaNode.url(`/v3/${NODE_KEY}`)}` }
        : undefined;
    try {
      const res = await fetch(
        `${mesh.gatewayUrl}/api/chain/balance/0x0000000000000000000000000000000000000001?network=sepolia`,
        { headers: { authorization: `Bearer ${apiKey}` } },
      );
      const text = await seen(res);
      expect(res.status).toBe(502);
      expect(text).toContain("project not allowed at");
      expect(text).not.toContain(NODE_KEY);
    } finally {
      sepoliaNode.refuse = undefined;
    }
  });
});
