// x402-batch across a Redis outage, with the real Redis server and the unmodified official client:
// a private redis-server (append-only file) that this suite stops and starts, a mesh of its own on
// it, and a call in flight (paid and verified, waiting on the node) when Redis goes away. That call
// is answered without data and charged nothing; once Redis is back, the payer's very next call is
// served (no 402 from a channel left out of step), and the channel charged exactly the calls served.
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { priceAtomic } from "@tollgate/catalog";
import { readDevnetFile } from "@tollgate/devnet";
import type { Mesh } from "@tollgate/local";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { createClient } from "redis";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type OwnServer, ownRedis } from "../chaos/servers.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { eventually, until } from "../support/eventually.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";
import { batchPayer } from "../support/x402-batch.ts";

const shared = inject("mesh");
const devnet = readDevnetFile(shared.devnetFile);
const PATH = "/api/chain/block-number";
const PRICE = priceAtomic("0.001");
// This suite's own receiver: a channel of its own, whatever other suites did with the payer.
const PAY_TO = privateKeyToAddress(generatePrivateKey());
const NAMESPACE = `xbredis${process.pid}`;

/**
 * The ethereum node's front door: forwards to the devnet's anvil, and while `held` keeps each
 * request waiting (a node slow to answer), so a paid call is in flight at a chosen moment.
 */
class HeldUpstream {
  target = "";
  held: Promise<void> | undefined;
  #release: (() => void) | undefined;
  waiting = 0;
  #server: Server | undefined;
  port = 0;
  async start() {
    this.#server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      if (this.held) {
        this.waiting++;
        await this.held;
        this.waiting--;
      }
      try {
        const upstream = await fetch(this.target, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: Buffer.concat(chunks),
        });
        res.writeHead(upstream.status, { "content-type": "application/json" });
        res.end(Buffer.from(await upstream.arrayBuffer()));
      } catch {
        res.destroy();
      }
    });
    await new Promise<void>((r) => this.#server?.listen(0, "127.0.0.1", r));
    this.port = (this.#server.address() as { port: number }).port;
  }
  hold() {
    this.held = new Promise((r) => {
      this.#release = r;
    });
  }
  letGo() {
    this.held = undefined;
    this.#release?.();
  }
  async stop() {
    this.letGo();
    this.#server?.closeAllConnections();
    await new Promise<void>((r) => this.#server?.close(() => r()));
  }
}

let redis: OwnServer;
/** The mesh's link to Redis (stand-in for the network path), so a test can lose replies on it. */
let redisLink: Awaited<ReturnType<typeof tcpProxy>>;
let mesh: Mesh;
const upstream = new HeldUpstream();
// One payer (one channel) for the suite: its client keeps the channel's state between the tests.
const payer = batchPayer(devnet, "payer6");
const call = () => payer.fetch(`${mesh.gatewayUrl}${PATH}`);

/** Waits until a paid call holds the channel (its lock in the record), read beside the mesh's link. */
async function channelHeld(): Promise<void> {
  const watcher = createClient({ url: `redis://127.0.0.1:${redis.port}` });
  await watcher.connect();
  try {
    await until(
      "the paid call held its channel",
      async () => {
        const [key] = (await watcher.keys("*:server:channel:*")).filter((k) => !k.endsWith(":lock"));
        const record = JSON.parse((key && (await watcher.get(key))) || "{}") as { pendingRequest?: unknown };
        return !!record.pendingRequest;
      },
      30_000,
      25,
    );
  } finally {
    await watcher.quit();
  }
}

/** Calls until the first answer that is not 503 (Redis unreachable while the mesh reconnects). */
async function firstAnswerBack(): Promise<{ status: number; body: string; before: number[] }> {
  const before: number[] = [];
  const answer = await eventually(
    async () => {
      const res = await call();
      const got = { status: res.status, body: await res.text() };
      if (got.status === 503) before.push(got.status);
      return got;
    },
    (got) => got.status !== 503,
    30_000,
    200,
  );
  return { ...answer, before };
}

beforeAll(async () => {
  redis = await ownRedis(mkdtempSync(join(tmpdir(), "xb-redis-")));
  redisLink = await tcpProxy(redis.port);
  upstream.target = devnet.chains.ethereum?.rpcUrl ?? "";
  await upstream.start();
  const base = sharedSettlementEnv("spare5");
  mesh = await startOwnMesh({
    stateDir: shared.stateDir,
    namespace: NAMESPACE,
    onLine: (s, l) => process.env.MESH_LOGS && process.stderr.write(`[${s}] ${l}\n`),
    env: {
      LOG_LEVEL: "warn",
      REDIS_URL: redisLink.url("redis"),
      // The real Redis or nothing.
      REDIS_STANDIN: "false",
      UPSTREAMS_ETHEREUM: `http://127.0.0.1:${upstream.port}`,
      UPSTREAMS_SEPOLIA: devnet.chains.sepolia?.rpcUrl ?? "",
    },
    serviceEnv: {
      "payment-verifier": { ...base, X402_PAY_TO: PAY_TO, PAYMENT_SCHEMES: "exact,x402-batch" },
      // The node is held for a while on purpose: the gateway waits for it.
      "rpc-proxy": { UPSTREAM_TIMEOUT_MS: "30000" },
    },
  });
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await upstream.stop();
  await redisLink?.close();
  await redis?.stop();
});

describe("x402-batch across a Redis outage (private redis-server stopped and started, official client)", () => {
  it("a call in flight when Redis stops charges nothing, and the payer's next call once Redis is back is served in step", async () => {
    let served = 0n;
    const serve = async () => {
      const res = await call();
      const body = await res.text();
      expect(res.status, body).toBe(200);
      served += PRICE;
      // The receipt's channel state: charged exactly the calls served so far, this one included.
      const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
      const state = (receipt.extra as { channelState?: { chargedCumulativeAmount?: string } }).channelState;
      expect(state?.chargedCumulativeAmount).toBe(String(served));
    };
    // The deposit and two vouchers.
    for (let i = 0; i < 3; i++) await serve();

    // A voucher call verified (the channel held for it) and waiting on the node when Redis stops.
    upstream.hold();
    const inFlight = call().then(
      async (res) => ({ status: res.status, body: await res.text() }),
      (err: unknown) => ({ status: 0, body: String(err) }),
    );
    await until("the paid call reached the node", () => upstream.waiting > 0, 30_000, 25);
    // A paying client's node call starts beside Verify (see the gateway's README): Redis stops only
    // once Verify holds the channel (its lock in the channel's record), so the call in flight is a
    // verified one.
    await channelHeld();
    await redis.stop();
    upstream.letGo();
    const lost = await inFlight;
    expect(lost.status, lost.body).not.toBe(200);

    await redis.start();
    // Back: the first answer that is not "Redis unavailable" (503, while payment-verifier
    // reconnects) is the call served, with the channel in step (no 402 in between).
    const back = await firstAnswerBack();
    expect(back.status, `${back.body} after ${back.before.join(",")}`).toBe(200);
    served += PRICE;
    for (let i = 0; i < 3; i++) await serve();

    // What the channel charged is exactly the calls served: the lost call was never charged.
    const client = createClient({ url: `redis://127.0.0.1:${redis.port}` });
    await client.connect();
    try {
      const keys = (await client.keys("*:server:channel:*")).filter((k) => !k.endsWith(":lock"));
      expect(keys.length).toBe(1);
      const record = JSON.parse((await client.get(keys[0] ?? "")) ?? "{}") as {
        chargedCumulativeAmount: string;
      };
      expect(BigInt(record.chargedCumulativeAmount)).toBe(served);
    } finally {
      await client.quit();
    }
  }, 240_000);

  it("a voucher whose admission Redis ran but whose answer was lost (replies held, then the link cut by a TCP proxy in front of the private Redis) leaves the channel free once Redis answers: the next call is served, not refused busy", async () => {
    const first = await call();
    expect(first.status, await first.text()).toBe(200);
    // Redis runs the admission (the channel's lock taken for this call) but its reply never comes.
    redisLink.holdReplies();
    const lostCall = call().then(
      async (res) => ({ status: res.status, body: await res.text() }),
      (err: unknown) => ({ status: 0, body: String(err) }),
    );
    await channelHeld();
    await redisLink.cut();
    // time-based: the link stays cut a while: the outage the lost call lives through.
    setTimeout(() => void redisLink.restore(), 300);
    const lost = await lostCall;
    expect(lost.status, lost.body).toBe(503);
    // The lock the lost admission took lasts the offer's timeout; without its release every voucher
    // until then is answered 402 "another request on this payment channel is in progress". Let go
    // before that call was answered: the payer's very next call is served.
    const next = await call();
    expect(next.status, await next.text()).toBe(200);
  }, 120_000);
});
