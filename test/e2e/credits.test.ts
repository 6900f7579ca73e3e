// Prepaid credits (issue 31) on a mesh of its own: an API key whose plan is spent, or whose account
// is credits-only, pays each call's price from its account's credits, exactly once per answered
// call (reverts included), never for a call the node did not answer, and none is lost when Redis
// is emptied mid-run. Credits are bought with the official x402 client (`POST /api/credits`, the
// key sent beside the payment, 1 USDC each); the balance is read as the dashboard reads it
// (AccountService.GetOwnCredits) and from the ledger in PostgreSQL.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { endpointById, priceAtomic } from "@tollgate/catalog";
import { type Mesh, meshAdmin } from "@tollgate/local";
import { createClient as createRedisClient } from "redis";
import { toFunctionSelector } from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { creditBalance, ledgerBalance as ledgerBalanceIn } from "../support/credits.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { eventually, until } from "../support/eventually.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { x402Payer } from "../support/x402.ts";

const shared = inject("mesh");
const devnet = JSON.parse(readFileSync(shared.devnetFile, "utf8"));
const reverter = devnet.chains.ethereum.contracts.reverter as string;
const namespace = `credits${process.pid}`;
let mesh: Mesh;
let databaseUrl: string;

/** Every key of this mesh in the machine's Redis deleted at once: a Redis that restarted empty. */
async function emptyRedis(): Promise<void> {
  const redis = createRedisClient({ url: "redis://127.0.0.1:6379" });
  await redis.connect();
  try {
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(keys);
  } finally {
    await redis.close();
  }
}
/** sepolia's node in this mesh: accepts connections and closes them (every sepolia call fails). */
let deadNode: Server;

beforeAll(async () => {
  deadNode = createServer((socket) => socket.destroy());
  await new Promise<void>((r) => deadNode.listen(0, "127.0.0.1", r));
  const deadPort = (deadNode.address() as { port: number }).port;
  mesh = await startOwnMesh({
    stateDir: shared.stateDir,
    namespace,
    env: {
      LOG_LEVEL: "warn",
      REDIS_BUDGET_MS: "2000",
      UPSTREAMS_ETHEREUM: devnet.chains.ethereum.rpcUrl,
      UPSTREAMS_SEPOLIA: `http://127.0.0.1:${deadPort}`,
      // A Redis that lost the copy is noticed within half a second.
      REDIS_SEED_CHECK_MS: "500",
    },
    serviceEnv: { "payment-verifier": { ...sharedSettlementEnv("spare2") } },
  });
  databaseUrl = mesh.databaseUrl;
});

afterAll(async () => {
  await mesh?.stop();
  deadNode?.close();
});

const at = () => ({
  stateDir: shared.stateDir,
  quotaMeterAddr: `127.0.0.1:${mesh.ports["quota-meter"].main}`,
});
/** payer5 buys 1 USDC of credits for the key's account; the balance after it (atomic units). */
async function buy(apiKey: string): Promise<number> {
  const res = await x402Payer(devnet, "payer5").fetch(`${mesh.gatewayUrl}/api/credits?amount=1`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}` },
  });
  const body = (await res.json()) as { data: { balance_usdc: string } };
  expect(res.status).toBe(200);
  return Math.round(Number(body.data.balance_usdc) * 1_000_000);
}
const balance = (accountId: string) => creditBalance(at(), accountId);

const ledgerBalance = (accountId: string) => ledgerBalanceIn(databaseUrl, accountId);

async function account(plan: { daily?: number; monthly?: number; burst?: number; creditsOnly?: boolean }) {
  const admin = meshAdmin(mesh);
  try {
    const made = await admin.quickstart(`credits-${Math.random()}`, plan);
    return { accountId: made.account.id, apiKey: made.secret };
  } finally {
    admin.close();
  }
}

const call = (key: string, path = "/api/chain/block-number", init: RequestInit = {}) =>
  fetch(`${mesh.gatewayUrl}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) },
  });

/** block-number's price in USDC atomic units, from the catalog. */
const BLOCK_NUMBER = Number(priceAtomic(endpointById("blockNumber")?.price ?? "0"));

describe("prepaid credits", () => {
  it("a spent plan draws each call's price from credits, shown in X-Credits-Remaining and meta.cost_usdc", async () => {
    const a = await account({ daily: 1, monthly: 0 });
    // On the plan: no draw, no credits header.
    const onPlan = await call(a.apiKey);
    expect(onPlan.status).toBe(200);
    expect(onPlan.headers.get("x-credits-remaining")).toBeNull();
    // Spent, no credits: the 429 as before, naming the top-up.
    const refused = await call(a.apiKey);
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { error: string; message: string };
    expect(body.error).toBe("daily_limit_exceeded");
    expect(body.message).toContain("POST /api/credits?amount=1|5|20");

    expect(await buy(a.apiKey)).toBe(1_000_000);
    const drawn = await call(a.apiKey);
    expect(drawn.status).toBe(200);
    expect(drawn.headers.get("x-credits-remaining")).toBe("0.999");
    expect(drawn.headers.get("x-quota-day-used")).toBe("1");
    expect(((await drawn.json()) as { meta: { cost_usdc: string } }).meta.cost_usdc).toBe("0.001");
    // A revert is an answer: charged from credits like data.
    const reverted = await call(a.apiKey, "/api/chain/call", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ to: reverter, data: toFunctionSelector("alwaysReverts()") }),
    });
    expect(reverted.status).toBe(422);
    expect(reverted.headers.get("x-credits-remaining")).toBe("0.994");
    expect(((await reverted.json()) as { meta: { cost_usdc: string } }).meta.cost_usdc).toBe("0.005");
    // The dashboard's balance counts what the key's credit lease still holds: exact once this
    // gateway has reported the calls (its next usage batch).
    expect(await eventually(() => balance(a.accountId), 994_000)).toBe(994_000);
    expect(await eventually(() => ledgerBalance(a.accountId), 994_000)).toBe(994_000);
  });

  it("a call the node did not answer draws nothing", async () => {
    const a = await account({ daily: 0, monthly: 0, creditsOnly: true });
    await buy(a.apiKey);
    const failed = await call(a.apiKey, "/api/chain/block-number?network=sepolia");
    expect([502, 503]).toContain(failed.status);
    // The balance before it: its credits go back with its usage record.
    expect(failed.headers.get("x-credits-remaining")).toBe("1");
    expect(await eventually(() => balance(a.accountId), 1_000_000)).toBe(1_000_000);
    const served = await call(a.apiKey);
    expect(served.headers.get("x-credits-remaining")).toBe("0.999");
    expect(await eventually(() => ledgerBalance(a.accountId), 999_000)).toBe(999_000);
  });

  it("a credits-only account pays every call from credits; without them it is a 402 naming the top-up", async () => {
    const a = await account({ daily: 100, creditsOnly: true });
    const none = await call(a.apiKey);
    expect(none.status).toBe(402);
    const body = (await none.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("insufficient_credits");
    expect(body.error.message).toContain("POST /api/credits");
    await buy(a.apiKey);
    const first = await call(a.apiKey);
    expect(first.status).toBe(200);
    expect(first.headers.get("x-credits-remaining")).toBe("0.999");
    // Not on the plan: no window applies, so none is shown.
    expect(first.headers.get("x-quota-day-used")).toBeNull();
  });

  it("1,000 credit-drawing calls from 4 concurrent clients (and 100 more) leave the balance at top-ups minus their prices, exactly", async () => {
    // A burst guard of its own far above the load: every refusal here is the credits'.
    const a = await account({ daily: 0, monthly: 0, burst: 100_000, creditsOnly: true });
    // 1 USDC: exactly 1,000 calls of 0.001; 1,100 are sent, so the last 100 are refused.
    await buy(a.apiKey);
    let served = 0;
    let refused = 0;
    const client = async () => {
      for (let i = 0; i < 275; i++) {
        const res = await call(a.apiKey);
        await res.arrayBuffer();
        if (res.status === 200) served++;
        else if (res.status === 402) refused++;
        else throw new Error(`unexpected ${res.status}`);
      }
    };
    await Promise.all([client(), client(), client(), client()]);
    expect({ served, refused }).toEqual({ served: 1_000, refused: 100 });
    expect(await balance(a.accountId)).toBe(0);
    expect(await eventually(() => ledgerBalance(a.accountId), 0)).toBe(0);
  });

  it("Redis emptied mid-run loses no credit: the balance is rebuilt from the ledger and the draws in flight", async () => {
    const a = await account({ daily: 0, monthly: 0, burst: 100_000, creditsOnly: true });
    await buy(a.apiKey);
    let drawn = 0;
    const client = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const res = await call(a.apiKey);
        await res.arrayBuffer();
        expect(res.status).toBe(200);
        // A call served while the copy is seeded again fails open (spec 8.3): served, not drawn.
        if (res.headers.get("x-credits-remaining") !== null) drawn += BLOCK_NUMBER;
      }
    };
    const running = Promise.all([client(150), client(150)]);
    // Mid-run: once calls have been served and drawn.
    await until("calls were served and drawn", () => drawn > 0);
    await emptyRedis();
    await running;
    expect(drawn).toBeGreaterThan(0);
    expect(await eventually(() => ledgerBalance(a.accountId), 1_000_000 - drawn)).toBe(1_000_000 - drawn);
    expect(await eventually(() => balance(a.accountId), 1_000_000 - drawn)).toBe(1_000_000 - drawn);
  });

  it("/api/pricing, /openapi.json and /llms.txt say how credits are bought and spent", async () => {
    const pricing = (await (await fetch(`${mesh.gatewayUrl}/api/pricing`)).json()) as {
      data: { credits: { buy: string; top_ups_usdc: string[]; spend: string } };
    };
    expect(pricing.data.credits.top_ups_usdc).toEqual(["1", "5", "20"]);
    expect(pricing.data.credits.buy).toMatch(
      /^POST \/api\/credits\?amount=.*x402 \(exact\) or MPP \(charge\)/,
    );
    expect(pricing.data.credits.spend).toContain("X-Credits-Remaining");
    const openapi = (await (await fetch(`${mesh.gatewayUrl}/openapi.json`)).json()) as {
      components: { headers: Record<string, { description: string }> };
      paths: Record<string, { get?: { responses: Record<string, { headers?: Record<string, unknown> }> } }>;
    };
    expect(openapi.components.headers["X-Credits-Remaining"]?.description).toContain("prepaid credits");
    expect(
      Object.keys(openapi.paths["/api/chain/block-number"]?.get?.responses["200"]?.headers ?? {}),
    ).toContain("X-Credits-Remaining");
    const llms = await (await fetch(`${mesh.gatewayUrl}/llms.txt`)).text();
    expect(llms).toContain("/api/credits?amount=1|5|20");
    expect(llms).toContain("X-Credits-Remaining");
  });
});
