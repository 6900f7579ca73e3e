import { readFileSync } from "node:fs";
import { freePort, type Mesh, meshAdmin, startMesh } from "@tollgate/local";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import pg from "pg";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { assertConforms } from "../support/openapi.ts";
import { type DevnetInfo, settlementClient, usdcBalance, x402Payer } from "../support/x402.ts";

const shared = inject("mesh");
const devnet = JSON.parse(readFileSync(shared.devnetFile, "utf8")) as DevnetInfo & {
  accounts: { role: string; privateKey: string }[];
};
let mesh: Mesh;
const lines: string[] = [];

// The embedded default on a machine without Redis, NATS or a PostgreSQL server: both URLs point at
// closed ports and no DATABASE_URL is given, so the launcher runs the embedded PGlite and every
// service falls back to its stand-in and still serves.
beforeAll(async () => {
  const [redisPort, natsPort] = [await freePort(), await freePort()];
  mesh = await startMesh({
    stateDir: shared.stateDir,
    namespace: `standin${process.pid}`,
    env: {
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      NATS_URL: `nats://127.0.0.1:${natsPort}`,
      DATABASE_URL: "",
    },
    serviceEnv: {
      "rpc-proxy": {
        UPSTREAMS_ETHEREUM: devnet.chains.ethereum?.rpcUrl ?? "",
        UPSTREAMS_SEPOLIA: devnet.chains.sepolia?.rpcUrl ?? "",
      },
      "payment-verifier": {
        ...sharedSettlementEnv("spare4"),
      },
    },
    onLine: (service, line) => lines.push(`[${service}] ${line}`),
  });
});

afterAll(async () => {
  await mesh?.stop();
});

describe("embedded default without Redis and NATS (stand-ins)", () => {
  it("says so in one line per stand-in", () => {
    const said = (service: string, what: RegExp) =>
      lines.filter((l) => l.startsWith(`[${service}]`) && what.test(l)).length;
    expect(said("quota-meter", /Redis is unreachable.*in-memory/)).toBe(1);
    expect(said("payment-verifier", /Redis is unreachable.*in memory/)).toBe(1);
    expect(said("quota-meter", /NATS is unreachable.*held locally/)).toBe(1);
    expect(said("payment-verifier", /NATS is unreachable.*held locally/)).toBe(1);
    expect(said("payment-verifier", /x402-batch is not offered: its channel state must be in Redis/)).toBe(1);
  });

  it("offers no x402-batch without Redis: vouchers kept in one process's memory would never be claimed", async () => {
    const res = await fetch(`${mesh.gatewayUrl}/api/chain/block-number`);
    expect(res.status).toBe(402);
    const offer = decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
    expect(offer.accepts.map((a) => a.scheme)).toEqual(["exact"]);
  });

  it("keeps its records in the embedded PostgreSQL (PGlite), reached like a real server", async () => {
    expect(mesh.postgres).toBeDefined();
    expect(mesh.databaseUrl).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
    expect(lines.some((l) => l.startsWith("[postgres]") && /PGlite\) ready/.test(l))).toBe(true);
  });

  it("meters API-key calls on the in-memory store, the account recorded in PostgreSQL", async () => {
    const admin = meshAdmin(mesh);
    const { secret, account } = await admin.quickstart("standin", { daily: 2 });
    admin.close();
    const db = new pg.Client({ connectionString: mesh.databaseUrl });
    await db.connect();
    const stored = await db.query("select name, daily_limit from accounts where id = $1", [account.id]);
    await db.end();
    expect(stored.rows).toEqual([{ name: "standin", daily_limit: "2" }]);
    const call = () =>
      request(mesh.gatewayUrl).get("/api/chain/block-number").set("Authorization", `Bearer ${secret}`);
    const first = await call();
    expect(first.status).toBe(200);
    await assertConforms("get", "/api/chain/block-number", first);
    expect(first.headers["x-quota-day-used"]).toBe("1");
    await call();
    const third = await call();
    expect(third.status).toBe(429);
    expect(third.body.error).toBe("daily_limit_exceeded");
    await assertConforms("get", "/api/chain/block-number", third);
  });

  it("takes an x402 payment with the official client and settles it", async () => {
    const payer = x402Payer(devnet, "payer8");
    const chain = settlementClient(devnet);
    const before = await usdcBalance(chain, devnet, devnet.demo.settlement.payTo);
    const res = await payer.fetch(`${mesh.gatewayUrl}/api/chain/chain-id?network=sepolia`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown }).data).toEqual({
      chain_id: "0xaa36a7",
      network: "sepolia",
    });
    expect(await usdcBalance(chain, devnet, devnet.demo.settlement.payTo)).toBe(before + 1000n);
  });
});
