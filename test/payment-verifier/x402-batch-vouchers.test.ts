// x402-batch vouchers on a known channel, across two payment-verifier replicas sharing Redis, paid
// by the official batch-settlement client's deposit and then by vouchers signed with its
// signVoucher: the one-script path at Verify, Settle and Release keeps every guarantee of the
// scheme: one request per channel at a time on any replica ("channel busy"), the charge committed
// only after the call was answered, nothing consumed by a call with no answer, the corrective 402
// for a voucher that does not continue the channel, and 503 (never a payment served unchecked)
// when Redis is unreachable.
import { randomUUID } from "node:crypto";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { dirname } from "node:path";
import type { Devnet } from "@tollgate/devnet";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { signVoucher } from "@x402/evm/batch-settlement/client";
import { createClient as createRedis } from "redis";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BatchPayer, batchPayer } from "../support/x402-batch.ts";
import {
  BLOCK_NUMBER,
  challenge,
  cleanUp,
  devnetConfig,
  headerGetter,
  priceOf,
  resource,
  startSettlementDevnet,
  startVerifier,
  uniqueId,
  type VerifierClient,
} from "./support.ts";

type Header = { name: string; value: string };

let devnet: Devnet;
let a: VerifierClient;
let b: VerifierClient;
let shared: ReturnType<typeof devnetConfig>;
const stops: Array<() => Promise<void>> = [];
const namespace = uniqueId("pvbatch");
const prefixes: string[] = [];
const outboxDirs: string[] = [];
const PRICE = priceOf(BLOCK_NUMBER);
const NETWORK = () => devnet.demo.settlement.network;

/** A TCP hop in front of the machine's Redis that a test can cut (every connection refused). */
async function cuttableRedis(): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection(6379);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return {
    url: `redis://127.0.0.1:${port}`,
    cut() {
      server.close();
      for (const s of sockets) s.destroy();
    },
    close: () => (server.listening ? close() : Promise.resolve()),
  };
}

beforeAll(async () => {
  devnet = await startSettlementDevnet();
  const config = devnetConfig(devnet);
  shared = config;
  const other = devnetConfig(devnet);
  prefixes.push(config.redisPrefix);
  outboxDirs.push(config.outboxDir, other.outboxDir);
  const ra = await startVerifier(config, { eventsNamespace: namespace });
  const rb = await startVerifier({ ...config, outboxDir: other.outboxDir }, { eventsNamespace: namespace });
  a = ra.client;
  b = rb.client;
  stops.push(
    async () => {
      a.close();
      await ra.handle.stop();
    },
    async () => {
      b.close();
      await rb.handle.stop();
    },
  );
}, 120_000);

afterAll(async () => {
  for (const stop of stops) await stop();
  await devnet?.stop();
  if (devnet) outboxDirs.push(dirname(devnet.file));
  await cleanUp({ redisPrefixes: prefixes, namespace, outboxDirs });
});

/** A payer's channel, opened by the official client's deposit (Verify on one replica, Settle on it). */
async function openChannel(client: VerifierClient, role: string) {
  const payer = batchPayer(devnet, role);
  const required = payer.http.getPaymentRequiredResponse(headerGetter(await challenge(client, BLOCK_NUMBER)));
  const deposit = await payer.client.createPaymentPayload(required);
  const credentials = encode(payer, deposit);
  const requestId = uniqueId("req-");
  const v = await client.call("Verify", { requestId, resource: resource(BLOCK_NUMBER), credentials });
  expect(v.valid, v.reason).toBe(true);
  const s = await client.call("Settle", {
    requestId,
    paymentId: v.paymentId,
    resource: resource(BLOCK_NUMBER),
    credentials,
  });
  expect(s.settled, s.reason).toBe(true);
  const channelId = (deposit.payload as { voucher: { channelId: `0x${string}` } }).voucher.channelId;
  return {
    payer,
    channelId,
    /** PAYMENT-SIGNATURE carrying a voucher for `cumulative` on this channel. */
    async voucher(cumulative: bigint): Promise<Header[]> {
      return this.withVoucher(await signVoucher(payer.account, channelId, String(cumulative), NETWORK()));
    },
    /** PAYMENT-SIGNATURE carrying `voucher` as this channel's. */
    withVoucher(voucher: unknown): Header[] {
      const { deposit: _, ...rest } = deposit.payload as Record<string, unknown>;
      return encode(payer, { ...deposit, payload: { ...rest, type: "voucher", voucher } });
    },
  };
}

function encode(payer: BatchPayer, payload: PaymentPayload): Header[] {
  return Object.entries(payer.http.encodePaymentSignatureHeader(payload)).map(([name, value]) => ({
    name,
    value,
  }));
}

function verify(client: VerifierClient, credentials: Header[], requestId = uniqueId("req-")) {
  return client
    .call("Verify", { requestId, resource: resource(BLOCK_NUMBER), credentials })
    .then((r) => ({ ...r, requestId }));
}

function settle(client: VerifierClient, credentials: Header[], v: { paymentId: string; requestId: string }) {
  return client.call("Settle", {
    requestId: v.requestId,
    paymentId: v.paymentId,
    resource: resource(BLOCK_NUMBER),
    credentials,
  });
}

/** The channel record the settlement worker claims from (the SDK's, in Redis). */
async function record(channelId: string): Promise<{ chargedCumulativeAmount: string; signature: string }> {
  const redis = createRedis({ url: "redis://127.0.0.1:6379" });
  await redis.connect();
  try {
    const raw = await redis.get(`${prefixes[0]}channels::server:channel:${channelId.toLowerCase()}`);
    return JSON.parse(raw ?? "{}");
  } finally {
    await redis.close();
  }
}

function chargedIn(headers: Header[]): { charged?: string; cumulative?: string } {
  const receipt = decodePaymentResponseHeader(headerGetter(headers)("PAYMENT-RESPONSE") ?? "");
  const extra = receipt.extra as {
    chargedAmount?: string;
    channelState?: { chargedCumulativeAmount?: string };
  };
  return { charged: extra.chargedAmount, cumulative: extra.channelState?.chargedCumulativeAmount };
}

describe("x402-batch vouchers on a known channel, two replicas sharing Redis", () => {
  it("verifies on one replica and settles on the other: the charge lands in the channel record with the voucher, and the receipt says so", async () => {
    const ch = await openChannel(a, "payer3");
    const credentials = await ch.voucher(2n * PRICE);
    const v = await verify(a, credentials);
    expect(v.valid, v.reason).toBe(true);
    expect(v.scheme).toBe("x402-batch");
    // Verified, not yet charged: the node has not answered.
    expect((await record(ch.channelId)).chargedCumulativeAmount).toBe(String(PRICE));
    const s = await settle(b, credentials, v);
    expect(s.settled, s.reason).toBe(true);
    expect(chargedIn(s.headers)).toEqual({ charged: String(PRICE), cumulative: String(2n * PRICE) });
    expect(s.accrual).toMatchObject({ amount: String(PRICE), cumulative: String(2n * PRICE) });
    const after = await record(ch.channelId);
    expect(after.chargedCumulativeAmount).toBe(String(2n * PRICE));
    expect(after.signature).toBe(
      (
        JSON.parse(Buffer.from(credentials[0]?.value ?? "", "base64").toString()) as {
          payload: { voucher: { signature: string } };
        }
      ).payload.voucher.signature,
    );
    // The same voucher again: a replay, answered with the channel's state to resynchronise.
    const replay = await verify(b, credentials);
    expect(replay.valid).toBe(false);
    expect(replay.reason).toMatch(/cumulative_amount_mismatch/);
    const state = decodePaymentRequiredHeader(
      headerGetter(replay.headers)("PAYMENT-REQUIRED") ?? "",
    ).accepts.find((o) => o.scheme === "batch-settlement")?.extra.channelState as {
      chargedCumulativeAmount: string;
    };
    expect(state.chargedCumulativeAmount).toBe(String(2n * PRICE));
  });

  it("holds one request per channel across replicas: a second voucher while one is in flight is 'channel busy', on either replica", async () => {
    const ch = await openChannel(b, "payer5");
    const first = await ch.voucher(2n * PRICE);
    const [x, y] = await Promise.all([verify(a, first), verify(b, first)]);
    expect([x.valid, y.valid].sort()).toEqual([false, true]);
    const loser = x.valid ? y : x;
    const winner = x.valid ? x : y;
    expect(loser.reason).toMatch(/channel_busy/);
    expect(loser.errorCode).toBe("payment_invalid");
    // Once the first is settled (on the other replica), the channel takes the next voucher.
    expect((await settle(winner === x ? b : a, first, winner)).settled).toBe(true);
    const next = await ch.voucher(3n * PRICE);
    const v = await verify(b, next);
    expect(v.valid, v.reason).toBe(true);
    expect((await settle(a, next, v)).settled).toBe(true);
    expect((await record(ch.channelId)).chargedCumulativeAmount).toBe(String(3n * PRICE));
  });

  it("consumes nothing for a call that got no answer: Release frees the channel, and the same voucher then buys its call on the other replica", async () => {
    const ch = await openChannel(a, "payer6");
    const credentials = await ch.voucher(2n * PRICE);
    const v = await verify(a, credentials);
    expect(v.valid, v.reason).toBe(true);
    // A Verify retried for the same request (its replica went away) holds the same payment.
    const again = await verify(b, credentials, v.requestId);
    expect(again.paymentId).toBe(v.paymentId);
    await b.call("Release", {
      requestId: v.requestId,
      paymentId: v.paymentId,
      reason: "upstream_timeout",
      resource: resource(BLOCK_NUMBER),
      credentials,
    });
    expect((await record(ch.channelId)).chargedCumulativeAmount).toBe(String(PRICE));
    // The released payment cannot be settled any more; the voucher is still good for a new call.
    expect((await settle(a, credentials, v)).settled).toBe(false);
    const retry = await verify(b, credentials);
    expect(retry.valid, retry.reason).toBe(true);
    const s = await settle(a, credentials, retry);
    expect(s.settled, s.reason).toBe(true);
    expect((await record(ch.channelId)).chargedCumulativeAmount).toBe(String(2n * PRICE));
  });

  it("does not hold a payer's own vouchers to the attempt limits, nor count vouchers forged in its name against it", async () => {
    const config = {
      ...shared,
      outboxDir: devnetConfig(devnet).outboxDir,
      limits: { ...shared.limits, perPayer: { perSecond: 0.2, burst: 2 } },
    };
    outboxDirs.push(config.outboxDir);
    const limited = await startVerifier(config, { eventsNamespace: namespace });
    stops.push(async () => {
      limited.client.close();
      await limited.handle.stop();
    });
    const ch = await openChannel(limited.client, "payer8"); // the deposit: one attempt
    for (let n = 2n; n <= 6n; n++) {
      const credentials = await ch.voucher(n * PRICE);
      const v = await verify(limited.client, credentials);
      expect(v.valid, v.reason).toBe(true);
      expect((await settle(limited.client, credentials, v)).settled).toBe(true);
    }
    // Vouchers for the channel's next amount, each signed by another key: refused for their
    // signature, and not counted against the payer they name (only against their client), so a
    // forger cannot use up the payer's limit.
    const forged = [];
    for (let i = 0; i < 5; i++) {
      const other = privateKeyToAccount(generatePrivateKey());
      const voucher = await signVoucher(other, ch.channelId, String(7n * PRICE), NETWORK());
      forged.push(await verify(limited.client, ch.withVoucher(voucher)));
    }
    expect(forged.map((r) => r.errorCode)).toEqual(Array(5).fill("payment_invalid"));
    expect(forged[0]?.reason).toMatch(/voucher_signature/);
    // The payer's own next voucher is still served.
    const v = await verify(limited.client, await ch.voucher(7n * PRICE));
    expect(v.valid, v.reason).toBe(true);
  });

  it("refuses with 503 (service_unavailable), never a payment, while Redis is unreachable", async () => {
    const ch = await openChannel(a, "payer7");
    const hop = await cuttableRedis();
    const config = { ...shared, outboxDir: devnetConfig(devnet).outboxDir, redisUrl: hop.url };
    outboxDirs.push(config.outboxDir);
    const c = await startVerifier(config, { eventsNamespace: namespace });
    stops.push(async () => {
      c.client.close();
      await c.handle.stop();
      await hop.close();
    });
    const credentials = await ch.voucher(2n * PRICE);
    const ok = await verify(c.client, credentials);
    expect(ok.valid, ok.reason).toBe(true);
    hop.cut();
    const s = await settle(c.client, credentials, ok);
    expect(s.settled).toBe(false);
    expect(s.errorCode).toBe("service_unavailable");
    const v = await verify(c.client, await ch.voucher(3n * PRICE), uniqueId(`req-${randomUUID()}`));
    expect(v.valid).toBe(false);
    expect(v.errorCode).toBe("service_unavailable");
    // Nothing was charged for the call that could not be settled.
    expect((await record(ch.channelId)).chargedCumulativeAmount).toBe(String(PRICE));
  });
});
