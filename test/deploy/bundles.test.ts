// The bundles the images run (`pnpm build`: services/<service>/dist/main.mjs, deploy/docker/Dockerfile):
// built here, then payment-verifier (every way to pay: the bundled x402 and mppx code, the external
// libsecp256k1), quota-meter (its migrations and Lua scripts, read beside its sources) and the gateway
// in front of both are started from them as separate processes and must answer as from sources: ready
// on their health checks, an unpaid call gets the 402 with both the x402 and the MPP offers, an unknown
// API key a 401. A bundle that misses a file, a package or a path fails here, not in a pod.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Devnet } from "@tollgate/devnet";
import {
  freePort,
  mppDevnetEnv,
  REPO_ROOT,
  type RunningService,
  spawnService,
  x402DevnetEnv,
} from "@tollgate/local";
import { checkHealth } from "@tollgate/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSettlementDevnet } from "../payment-verifier/support.ts";
import { GATEWAY_TOKEN, MESH_CALLERS_ENV } from "../support/mesh.ts";
import { createTestDatabase, type TestDatabase } from "../support/postgres.ts";

const running: RunningService[] = [];
const lines: string[] = [];
const outbox = mkdtempSync(join(tmpdir(), "bundles-outbox-"));
let devnet: Devnet;
let database: TestDatabase;
let gatewayUrl: string;

beforeAll(async () => {
  execFileSync(process.execPath, ["tools/build/bundle.ts", "gateway", "payment-verifier", "quota-meter"], {
    cwd: REPO_ROOT,
    stdio: "pipe",
  });
  [devnet, database] = await Promise.all([startSettlementDevnet(), createTestDatabase("bundles")]);
  // No Redis or NATS needed: the single-node stand-ins (logged as such) and the outbox.
  const common = {
    BIND_HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    OUTBOX_DIR: outbox,
    REDIS_STANDIN: "true",
    REDIS_URL: "redis://127.0.0.1:1",
    NATS_URL: "nats://127.0.0.1:1",
  };
  const log = (_name: string, line: string) => lines.push(line);
  const quotaPort = await freePort();
  running.push(
    await spawnService(
      "quota-meter",
      {
        ...common,
        ...MESH_CALLERS_ENV,
        DATABASE_URL: database.url,
        API_KEY_PEPPER: "bundles-test-pepper-0123456789abcdef",
        GRPC_PORT: String(quotaPort),
        METRICS_PORT: String(await freePort()),
      },
      log,
      () => checkHealth(`127.0.0.1:${quotaPort}`),
      30_000,
      ["services/quota-meter/dist/main.mjs"],
    ),
  );
  const verifierPort = await freePort();
  running.push(
    await spawnService(
      "payment-verifier",
      {
        ...common,
        ...x402DevnetEnv(devnet),
        ...mppDevnetEnv(devnet),
        ...MESH_CALLERS_ENV,
        GRPC_PORT: String(verifierPort),
        METRICS_PORT: String(await freePort()),
        PAYMENT_SCHEMES: "exact,x402-batch,mpp-charge,mpp-session",
        MPP_SECRET_KEY: "bundles-test-mpp-secret-key-0123456789",
        X402_BATCH_AUTHORIZER_PRIVATE_KEY: `0x${"11".repeat(32)}`,
      },
      log,
      () => checkHealth(`127.0.0.1:${verifierPort}`),
      30_000,
      ["services/payment-verifier/dist/main.mjs"],
    ),
  );
  const port = await freePort();
  gatewayUrl = `http://127.0.0.1:${port}`;
  running.push(
    await spawnService(
      "gateway",
      {
        ...common,
        PORT: String(port),
        METRICS_PORT: String(await freePort()),
        MESH_TOKEN: GATEWAY_TOKEN,
        PAYMENT_VERIFIER_ADDR: `127.0.0.1:${verifierPort}`,
        QUOTA_METER_ADDR: `127.0.0.1:${quotaPort}`,
        // Not started: no call here reaches a node.
        RPC_PROXY_ADDR: `127.0.0.1:${await freePort()}`,
        PUBLIC_BASE_URL: gatewayUrl,
      },
      log,
      () =>
        fetch(`${gatewayUrl}/health`).then(
          (r) => r.ok,
          () => false,
        ),
      30_000,
      ["services/gateway/dist/main.mjs"],
    ),
  );
}, 120_000);

afterAll(async () => {
  for (const s of running.reverse()) await s.stop();
  await devnet?.stop();
  await database?.drop();
  if (devnet) rmSync(dirname(devnet.file), { recursive: true, force: true });
  rmSync(outbox, { recursive: true, force: true });
});

describe("services run from their bundles (what the images run)", () => {
  it("the gateway serves its free endpoints from the bundle", async () => {
    const pricing = await fetch(`${gatewayUrl}/api/pricing`);
    expect(pricing.status).toBe(200);
    const body = (await pricing.json()) as { data?: unknown };
    expect(body.data).toBeTruthy();
  });

  it("an unpaid call gets 402 with the x402 and the MPP offers payment-verifier built", async () => {
    const res = await fetch(`${gatewayUrl}/api/chain/block-number`);
    expect(res.status, lines.join("\n")).toBe(402);
    expect(res.headers.get("payment-required")).toMatch(/^[A-Za-z0-9+/=]+$/);
    const mpp = res.headers.get("www-authenticate") ?? "";
    expect(mpp).toMatch(/^Payment /);
    // Both MPP intents: charge (two currencies) and session.
    expect(mpp).toContain('intent="charge"');
    expect(mpp).toContain('intent="session"');
  });

  it("an unknown API key is refused by quota-meter's bundle (migrated, its Lua loaded): 401", async () => {
    const res = await fetch(`${gatewayUrl}/api/chain/block-number`, {
      // Well-formed (tg_live_ and 43 base64url characters), so only quota-meter can tell it is unknown.
      headers: { authorization: `Bearer tg_live_${"A".repeat(43)}` },
    });
    expect(res.status, lines.join("\n")).toBe(401);
    const body = (await res.json()) as { error?: { code?: string } };
    expect(body.error?.code).toBe("invalid_api_key");
  });
});
