// MPP session across a lost deduction, with the real Redis server and the unmodified official mppx
// client: a private redis-server (append-only file), a mesh of its own on it through a TCP proxy
// (the stand-in for the network path, so replies can be lost), paying on the shared devnet's Tempo
// chain (its channel reserve: a contract of ours for the TIP-1034 precompile). Redis runs a call's
// deduction and its answer is lost; Redis stays away past payment-verifier's read-back. The call is
// answered 503 (not a refused payment), and once Redis answers the deduction is given back: the
// channel is charged for the calls served, exactly. And a channel store that answers with an error
// (under mppx, which would read it as "channel not found"): a 503, and the payer pays on in its
// channel once the store is back.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { priceAtomic } from "@tollgate/catalog";
import { readDevnetFile } from "@tollgate/devnet";
import type { Mesh } from "@tollgate/local";
import { Credential } from "mppx";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type OwnServer, ownRedis } from "../chaos/servers.ts";
import { metric } from "../quota-meter/helpers.ts";
import { CountingProxy } from "../support/counting-proxy.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { eventually, until } from "../support/eventually.ts";
import { mppSessionPayer } from "../support/mppx.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";

const shared = inject("mesh");
const devnet = readDevnetFile(shared.devnetFile);
const PRICE = priceAtomic("0.001");

let redis: OwnServer;
let redisLink: Awaited<ReturnType<typeof tcpProxy>>;
let mesh: Mesh;
/** The node in front of Ethereum: holds a call's upstream request while a test breaks the store. */
let node: CountingProxy;

beforeAll(async () => {
  redis = await ownRedis(mkdtempSync(join(tmpdir(), "mpp-redis-")));
  redisLink = await tcpProxy(redis.port);
  node = await new CountingProxy(devnet.chains.ethereum?.rpcUrl ?? "").listen();
  mesh = await startOwnMesh({
    stateDir: shared.stateDir,
    namespace: `mppredis${process.pid}`,
    onLine: (s, l) => process.env.MESH_LOGS && process.stderr.write(`[${s}] ${l}\n`),
    env: {
      LOG_LEVEL: "warn",
      REDIS_URL: redisLink.url("redis"),
      REDIS_STANDIN: "false",
      UPSTREAMS_ETHEREUM: node.url(),
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
  await node?.close();
  await redis?.stop();
});

/** Runs `use` with a client of the private Redis, beside the proxy. */
const besideClient = () => createClient({ url: `redis://127.0.0.1:${redis.port}` });
async function beside<T>(use: (r: ReturnType<typeof besideClient>) => Promise<T>): Promise<T> {
  const watcher = besideClient();
  await watcher.connect();
  try {
    return await use(watcher);
  } finally {
    await watcher.quit();
  }
}

/** Channel `id`'s record as payment-verifier's mppx store keeps it, read beside the proxy. */
async function channel(id: string): Promise<{ spent: bigint; units: number } | undefined> {
  const raw = await beside(async (r) => {
    const [key] = await r.keys(`*mpp:channel:${id}`);
    return key ? r.get(key) : null;
  });
  if (!raw) return undefined;
  const record = JSON.parse(raw) as { spent: string; units: number };
  return { spent: BigInt(record.spent.replace("#__bigint", "")), units: record.units };
}

describe("MPP session across a lost deduction (private redis-server; its replies held, then the link cut by a TCP proxy)", () => {
  it("a call whose deduction Redis ran, with Redis away past the read-back, is answered 503 and not charged: once Redis answers the channel spent only the calls served", async () => {
    const { manager } = mppSessionPayer(devnet, "payer2", "0.05");
    const call = () => manager.fetch(`${mesh.gatewayUrl}/api/chain/chain-id`);
    const first = await call();
    expect(first.status).toBe(200);
    expect(first.receipt).toMatchObject({ spent: String(PRICE), units: 1 });
    const id = first.receipt?.channelId ?? "";

    // The second call's deduction (units 1 → 2) runs in Redis; its reply, and all after it, held.
    redisLink.holdRepliesTo('"units":2');
    const lost = call().then((res) => ({ status: res.status, receipt: res.receipt }));
    await until("Redis ran the deduction", async () => (await channel(id))?.units === 2, 20_000, 50);
    await redisLink.cut();
    // Cut until the call is answered: past payment-verifier's 5 s read-back, the write's outcome
    // stays unknown to it.
    const answered = await lost;
    await redisLink.restore();
    expect(answered.status).toBe(503);
    expect(answered.receipt).toBeNull();

    // Once Redis answers, the deduction is found landed and given back.
    await until("the deduction was given back", async () => (await channel(id))?.spent === PRICE, 20_000, 50);
    expect((await channel(id))?.units).toBe(1);
    // The payer's next call spends the voucher it signed for the call answered 503: charged once.
    const next = await eventually(call, (res) => res.status !== 503, 20_000, 200);
    expect(next.status).toBe(200);
    expect(next.receipt).toMatchObject({ spent: String(2n * PRICE), units: 2 });
  }, 120_000);

  // The channel's record replaced by a value of another Redis type: every command on that key
  // fails (WRONGTYPE) while the payment-verifier's other keys work, so the failure is the channel
  // store's alone. Stand-in: the wrong-typed key for a channel store whose command fails.
  it("a channel store that answers with an error (stand-in: the channel's key given another Redis type) is a 503 at Verify and at Settle, not a refused payment: the payer pays on in the same channel, charged once per call served", async () => {
    const { manager, sent } = mppSessionPayer(devnet, "payer2", "0.05");
    const call = () => manager.fetch(`${mesh.gatewayUrl}/api/chain/chain-id`);
    const first = await call();
    expect(first.status).toBe(200);
    const id = first.receipt?.channelId ?? "";
    const [key = ""] = await beside((r) => r.keys(`*mpp:channel:${id}`));
    expect(key).not.toBe("");
    // In one transaction each: the channel is never seen missing (mppx would read "not found").
    const broken = () => beside((r) => r.multi().rename(key, `${key}:aside`).hSet(key, "broken", "1").exec());
    const mended = () => beside((r) => r.multi().del(key).rename(`${key}:aside`, key).exec());
    const pvMetrics = mesh.ports["payment-verifier"].metrics;
    const unavailable = (step: "verify" | "settle") =>
      metric(pvMetrics, `payment_${step}_seconds_count`, {
        scheme: "mpp-session",
        outcome: "service_unavailable",
      });
    const answerOf = async (res: Awaited<ReturnType<typeof call>>) => ({
      status: res.status,
      body: (await res.json()) as { error?: { code?: string; message?: string } },
      receipt: res.receipt,
    });

    // At Verify: mppx validates the voucher against a channel it cannot read. One credential sent:
    // a 402 would have had the client sign and send another at once.
    await broken();
    let before = sent.length;
    const verifyFailures = await unavailable("verify");
    const atVerify = await answerOf(await call());
    await mended();
    expect(sent.length - before).toBe(1);
    expect(await unavailable("verify")).toBe(verifyFailures + 1);
    expect(atVerify).toMatchObject({ status: 503, body: { error: { code: "service_unavailable" } } });
    expect(atVerify.body.error?.message).toMatch(/MPP session channels are unavailable/);
    expect(atVerify.receipt).toBeNull();

    // At Settle: the node's answer is held until the store is broken under the verified call.
    node.holdOnly = ["eth_chainId"];
    node.mode = "hold";
    const mark = node.requests.length;
    const settling = call();
    // (Its one credential is sent before the node is reached: none may follow the answer.)
    await until("the call reached the node", async () =>
      node.since(mark).some((r) => r.methods.includes("eth_chainId")),
    );
    await broken();
    before = sent.length;
    const settleFailures = await unavailable("settle");
    node.release();
    const atSettle = await answerOf(await settling);
    await mended();
    expect(sent.length - before).toBe(0);
    // It was the Settle that met the broken store (Verify had passed before the node was called).
    expect(await unavailable("settle")).toBe(settleFailures + 1);
    expect(atSettle).toMatchObject({ status: 503, body: { error: { code: "service_unavailable" } } });
    expect(atSettle.receipt).toBeNull();

    // The store back: the next call is served in the same channel, charged one price after the first.
    const next = await call();
    expect(next.status).toBe(200);
    expect(next.receipt).toMatchObject({ channelId: id, spent: String(2n * PRICE), units: 2 });
    expect(await channel(id)).toEqual({ spent: 2n * PRICE, units: 2 });
    // One open (one deposit): the failures never sent the payer to open another channel.
    const actions = sent.map((s) => (Credential.deserialize(s).payload as { action: string }).action);
    expect(actions.filter((a) => a === "open")).toHaveLength(1);
  }, 120_000);
});
