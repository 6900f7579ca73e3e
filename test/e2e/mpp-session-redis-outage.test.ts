// MPP session across a lost deduction, with the real Redis server and the unmodified official mppx
// client: a private redis-server (append-only file), a mesh of its own on it through a TCP proxy
// (the stand-in for the network path, so replies can be lost), paying on the shared devnet's Tempo
// chain (its channel reserve: a contract of ours for the TIP-1034 precompile). Redis runs a call's
// deduction and its answer is lost; Redis stays away past payment-verifier's read-back. The call is
// answered 503 (not a refused payment), and once Redis answers the deduction is given back: the
// channel is charged for the calls served, exactly.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { priceAtomic } from "@tollgate/catalog";
import { readDevnetFile } from "@tollgate/devnet";
import { type Mesh, startMesh } from "@tollgate/local";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type OwnServer, ownRedis } from "../chaos/servers.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { mppSessionPayer } from "../support/mppx.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";

const shared = inject("mesh");
const devnet = readDevnetFile(shared.devnetFile);
const PRICE = priceAtomic("0.001");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let redis: OwnServer;
let redisLink: Awaited<ReturnType<typeof tcpProxy>>;
let mesh: Mesh;

beforeAll(async () => {
  redis = await ownRedis(mkdtempSync(join(tmpdir(), "mpp-redis-")));
  redisLink = await tcpProxy(redis.port);
  mesh = await startMesh({
    stateDir: shared.stateDir,
    namespace: `mppredis${process.pid}`,
    onLine: (s, l) => process.env.MESH_LOGS && process.stderr.write(`[${s}] ${l}\n`),
    env: {
      LOG_LEVEL: "warn",
      REDIS_URL: redisLink.url("redis"),
      REDIS_STANDIN: "false",
      UPSTREAMS_ETHEREUM: devnet.chains.ethereum?.rpcUrl ?? "",
      UPSTREAMS_SEPOLIA: devnet.chains.sepolia?.rpcUrl ?? "",
    },
    serviceEnv: {
      "payment-verifier": { ...sharedSettlementEnv("spare4"), PAYMENT_SCHEMES: "mpp-session" },
    },
  });
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await redisLink?.close();
  await redis?.stop();
});

/** The session channel's record as payment-verifier's mppx store keeps it, read beside the proxy. */
async function channel(): Promise<{ spent: bigint; units: number } | undefined> {
  const watcher = createClient({ url: `redis://127.0.0.1:${redis.port}` });
  await watcher.connect();
  try {
    const [key] = await watcher.keys("*mpp:channel:0x*");
    const raw = key ? await watcher.get(key) : null;
    if (!raw) return undefined;
    const record = JSON.parse(raw) as { spent: string; units: number };
    return { spent: BigInt(record.spent.replace("#__bigint", "")), units: record.units };
  } finally {
    await watcher.quit();
  }
}

async function until(what: string, done: () => Promise<boolean>, ms = 20_000): Promise<void> {
  for (const started = Date.now(); !(await done()); await sleep(50))
    if (Date.now() - started > ms) throw new Error(`timed out waiting until ${what}`);
}

describe("MPP session across a lost deduction (private redis-server; its replies held, then the link cut by a TCP proxy)", () => {
  it("a call whose deduction Redis ran, with Redis away past the read-back, is answered 503 and not charged: once Redis answers the channel spent only the calls served", async () => {
    const { manager } = mppSessionPayer(devnet, "payer2", "0.05");
    const call = () => manager.fetch(`${mesh.gatewayUrl}/api/chain/chain-id`);
    const first = await call();
    expect(first.status).toBe(200);
    expect(first.receipt).toMatchObject({ spent: String(PRICE), units: 1 });

    // The second call's deduction (units 1 → 2) runs in Redis; its reply, and all after it, held.
    redisLink.holdRepliesTo('"units":2');
    const lost = call().then((res) => ({ status: res.status, receipt: res.receipt }));
    await until("Redis ran the deduction", async () => (await channel())?.units === 2);
    await redisLink.cut();
    // Past payment-verifier's 5 s read-back: the write's outcome stays unknown to it.
    await sleep(6_500);
    await redisLink.restore();
    const answered = await lost;
    expect(answered.status).toBe(503);
    expect(answered.receipt).toBeNull();

    // Once Redis answers, the deduction is found landed and given back.
    await until("the deduction was given back", async () => (await channel())?.spent === PRICE);
    expect((await channel())?.units).toBe(1);
    // The payer's next call spends the voucher it signed for the call answered 503: charged once.
    let next = await call();
    for (let i = 0; next.status === 503 && i < 50; i++) {
      await sleep(200);
      next = await call();
    }
    expect(next.status).toBe(200);
    expect(next.receipt).toMatchObject({ spent: String(2n * PRICE), units: 2 });
  }, 120_000);
});
