// payment-verifier deployment modes: a remote facilitator over the standard HTTP API, outages of
// the facilitator or the settlement chain, the single-node Redis stand-in, two replicas sharing
// Redis, and the official @x402/fetch client paying through a minimal stand-in for the gateway.
import { createServer, type Server } from "node:http";
import { type AddressInfo, createServer as createTcpServer, connect as netConnect } from "node:net";
import { dirname } from "node:path";
import type { Devnet } from "@tollgate/devnet";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import type { PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { PaymentVerifierConfig, X402Config } from "../../services/payment-verifier/src/config.ts";
import { eventually } from "../support/eventually.ts";
import {
  BLOCK_NUMBER,
  CALL,
  cleanUp,
  devnetConfig,
  facilitatorHandler,
  type Header,
  listen as listenOn,
  pay,
  payer,
  priceOf,
  quietLogger,
  settle,
  settlementReader,
  startSettlementDevnet,
  startVerifier,
  uniqueId,
  usdcBalance,
  verify,
} from "./support.ts";

let devnet: Devnet;
let chain: PublicClient;
const prefixes: string[] = [];
const outboxDirs: string[] = [];
const namespace = uniqueId("pvmodes");
const cleanups: Array<() => Promise<unknown> | unknown> = [];

/** Config with its own Redis prefix (removed after the suite). */
function cfg(
  overrides: Partial<PaymentVerifierConfig> = {},
  x402: Partial<X402Config> = {},
): PaymentVerifierConfig {
  const c = devnetConfig(devnet, overrides, x402);
  prefixes.push(c.redisPrefix);
  outboxDirs.push(c.outboxDir);
  return c;
}

async function listen(server: Server): Promise<number> {
  const { port, close } = await listenOn(server);
  cleanups.push(close);
  return port;
}

async function start(config: PaymentVerifierConfig, deps: Parameters<typeof startVerifier>[1] = {}) {
  const v = await startVerifier(config, { eventsNamespace: namespace, ...deps });
  cleanups.push(async () => {
    v.client.close();
    await v.handle.stop();
  });
  return v;
}

beforeAll(async () => {
  devnet = await startSettlementDevnet();
  chain = settlementReader(devnet);
});

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await devnet?.stop();
  if (devnet) outboxDirs.push(dirname(devnet.file));
  await cleanUp({ redisPrefixes: prefixes, namespace, outboxDirs });
});

describe("remote facilitator (the official x402Facilitator served over the standard HTTP API)", () => {
  it("verifies and settles through HTTPFacilitatorClient", async () => {
    const calls: string[] = [];
    const server = createServer(facilitatorHandler(devnet, calls));
    const port = await listen(server);

    const { client } = await start(
      cfg(
        { schemes: ["exact"] },
        { facilitator: { mode: "remote", url: `http://127.0.0.1:${port}`, timeoutMs: 10_000 } },
      ),
    );
    const p = payer(devnet, "payer1");
    const before = await usdcBalance(chain, devnet, devnet.demo.settlement.payTo);
    const { credentials } = await pay(client, p, CALL);
    const v = await verify(client, CALL, credentials);
    expect(v.valid, v.reason).toBe(true);
    const s = await settle(client, CALL, credentials, v.paymentId, v.requestId);
    expect(s.settled, s.reason).toBe(true);
    expect(calls).toEqual(["GET /supported", "POST /verify", "POST /settle"]);
    expect((await usdcBalance(chain, devnet, devnet.demo.settlement.payTo)) - before).toBe(priceOf(CALL));
  });
});

describe("configuration", () => {
  it("refuses to start when the facilitator does not support the settlement network", async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          kinds: [{ x402Version: 2, scheme: "exact", network: "eip155:1" }],
          extensions: [],
          signers: {},
        }),
      );
    });
    const port = await listen(server);
    const config = cfg(
      { schemes: ["exact"] },
      { facilitator: { mode: "remote", url: `http://127.0.0.1:${port}`, timeoutMs: 2_000 } },
    );
    await expect(startVerifier(config, { eventsNamespace: namespace })).rejects.toThrow(
      "the x402 facilitator does not support scheme exact on eip155:84532",
    );
  });
});

describe("outages", () => {
  it("answers service_unavailable when the settlement chain is unreachable (self-hosted facilitator)", async () => {
    const good = await start(cfg());
    const base = cfg().x402.facilitator;
    if (base.mode !== "local") throw new Error("expected local");
    const { client } = await start(
      cfg(
        {},
        { facilitator: { ...base, rpcUrl: "http://127.0.0.1:1" }, settlementRpcUrl: "http://127.0.0.1:1" },
      ),
    );
    // The offer needs no chain; the payment is well-formed and would be valid.
    const { credentials } = await pay(good.client, payer(devnet, "payer2"), CALL);
    const v = await verify(client, CALL, credentials);
    expect(v).toMatchObject({ valid: false, errorCode: "service_unavailable", headers: [] });
    expect(v.reason).toBe(
      "the payment facilitator is unavailable: settlement chain unreachable during verify",
    );
    // And nothing was reserved: the same payment verifies where the chain is reachable.
    const ok = await verify(good.client, CALL, credentials);
    expect(ok.valid).toBe(true);
    await good.client.call("Release", { requestId: ok.requestId, paymentId: ok.paymentId, reason: "test" });
  });

  it("answers service_unavailable while a remote facilitator is unreachable, and recovers when it is back", async () => {
    const good = await start(cfg());
    const { credentials } = await pay(good.client, payer(devnet, "payer6"), CALL);
    const server = createServer(facilitatorHandler(devnet, []));
    const port = await listen(server);
    await new Promise<void>((resolve) => server.close(() => resolve())); // nothing listens there now
    const { client } = await start(
      cfg(
        { schemes: ["exact"] },
        { facilitator: { mode: "remote", url: `http://127.0.0.1:${port}`, timeoutMs: 2_000 } },
      ),
    );
    // The scheme whose facilitator is down drops out of the 402; the 402 itself still answers.
    const offer = await client.call("Challenge", {
      requestId: "r",
      resource: { endpoint: CALL, network: "ethereum", url: "" },
    });
    expect(offer.headers).toEqual([]);
    const v = await verify(client, CALL, credentials);
    expect(v).toMatchObject({ valid: false, errorCode: "service_unavailable", headers: [] });

    // The facilitator comes back on the same address: the next calls find it.
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    const ok = await eventually(
      () => verify(client, CALL, credentials),
      (r) => r.valid,
      30_000,
      100,
    );
    expect(ok.valid, ok.reason).toBe(true);
    await client.call("Release", { requestId: ok.requestId, paymentId: ok.paymentId, reason: "test" });
  });
});

describe("Redis stand-in", () => {
  it("uses an in-memory store when Redis is unreachable at startup, says so once, and still refuses replays", async () => {
    const logger = quietLogger();
    const warn = vi.spyOn(logger, "warn");
    const { handle, client } = await start(cfg({ redisUrl: "redis://127.0.0.1:1" }), { logger });
    expect(handle.reservationStore).toBe("memory");
    const lines = warn.mock.calls.filter((args) => JSON.stringify(args).includes("Redis is unreachable"));
    expect(lines).toHaveLength(1);
    expect(lines[0]?.[0]).toBe(
      "Redis is unreachable at redis://127.0.0.1:1: payment reservations are kept in memory (single node only)",
    );

    const { credentials } = await pay(client, payer(devnet, "payer3"), BLOCK_NUMBER);
    const results = await Promise.all([1, 2, 3].map(() => verify(client, BLOCK_NUMBER, credentials)));
    expect(results.filter((r) => r.valid)).toHaveLength(1);
    const winner = results.find((r) => r.valid);
    const s = await settle(
      client,
      BLOCK_NUMBER,
      credentials,
      winner?.paymentId ?? "",
      winner?.requestId ?? "",
    );
    expect(s.settled).toBe(true);
    expect((await verify(client, BLOCK_NUMBER, credentials)).reason).toMatch(/already used/);
  });
});

describe("Redis required (REDIS_STANDIN=false, production)", () => {
  it("does not start serving while Redis is unreachable, then starts on the shared store", async () => {
    // A port with nothing behind it yet; later a plain forwarder to the real Redis opens on it.
    const probe = createTcpServer();
    const port = await new Promise<number>((r) =>
      probe.listen(0, "127.0.0.1", () => r((probe.address() as AddressInfo).port)),
    );
    await new Promise<void>((r) => probe.close(() => r()));
    let started = false;
    const starting = start(cfg({ redisUrl: `redis://127.0.0.1:${port}`, redisStandIn: false })).then((s) => {
      started = true;
      return s;
    });
    // time-based: proves it does NOT start without its Redis: 2.5 s of trying.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(started).toBe(false);

    const forwarder = createTcpServer((client) => {
      const upstream = netConnect(6379, "127.0.0.1");
      client.pipe(upstream).pipe(client);
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
    });
    await new Promise<void>((r) => forwarder.listen(port, "127.0.0.1", () => r()));
    try {
      const { handle } = await starting;
      expect(handle.reservationStore).toBe("redis");
    } finally {
      forwarder.close();
    }
  });
});

describe("two replicas sharing Redis", () => {
  it("serve one payment at most once between them", async () => {
    const shared = cfg();
    const a = await start(shared);
    const b = await start({ ...shared, outboxDir: cfg().outboxDir });
    const p = payer(devnet, "payer4");
    const before = await usdcBalance(chain, devnet, p.address);
    const { credentials } = await pay(a.client, p, CALL);
    const results = await Promise.all([
      verify(a.client, CALL, credentials),
      verify(b.client, CALL, credentials),
      verify(a.client, CALL, credentials),
      verify(b.client, CALL, credentials),
    ]);
    expect(results.filter((r) => r.valid)).toHaveLength(1);
    const winner = results.find((r) => r.valid);
    // Settle on the other replica: the reservation is shared.
    const s = await settle(b.client, CALL, credentials, winner?.paymentId ?? "", winner?.requestId ?? "");
    expect(s.settled).toBe(true);
    for (const c of [a.client, b.client]) {
      expect((await verify(c, CALL, credentials)).reason).toMatch(/already used/);
    }
    expect(before - (await usdcBalance(chain, devnet, p.address))).toBe(priceOf(CALL));
  });
});

describe("@x402/fetch through a stand-in gateway", () => {
  it("pays a 402 automatically: Challenge → Verify → upstream → Settle, PAYMENT-RESPONSE back", async () => {
    const { client } = await start(cfg());
    let upstreamFails = false;
    const server = createServer(async (req, res) => {
      const requestId = uniqueId("req-");
      const resource = { endpoint: CALL, network: "ethereum", url: `http://${req.headers.host}${req.url}` };
      const credentials: Header[] = [];
      for (const name of ["payment-signature", "x-payment"]) {
        const value = req.headers[name];
        if (typeof value === "string") credentials.push({ name, value });
      }
      const send = (status: number, headers: Header[], body: unknown) => {
        res.writeHead(status, {
          "content-type": "application/json",
          ...Object.fromEntries(headers.map((h) => [h.name, h.value])),
        });
        res.end(JSON.stringify(body));
      };
      if (credentials.length === 0) {
        const ch = await client.call("Challenge", { requestId, resource });
        return send(402, ch.headers, { data: null, error: { code: "payment_required" } });
      }
      const v = await client.call("Verify", { requestId, resource, credentials });
      if (!v.valid)
        return send(402, v.headers, { data: null, error: { code: v.errorCode, message: v.reason } });
      if (upstreamFails) {
        await client.call("Release", { requestId, paymentId: v.paymentId, reason: "upstream_unavailable" });
        return send(503, [], { data: null, error: { code: "upstream_unavailable" } });
      }
      const s = await client.call("Settle", { requestId, paymentId: v.paymentId, resource, credentials });
      if (!s.settled)
        return send(402, s.headers, { data: null, error: { code: s.errorCode, message: s.reason } });
      send(200, s.headers, {
        data: { result: "0x2a" },
        error: null,
        meta: {
          cost_usdc: s.meta?.costUsdc,
          payment_chain: s.meta?.paymentChain,
          payment_token: s.meta?.paymentToken,
        },
      });
    });
    const port = await listen(server);

    const key = devnet.accounts.find((a) => a.role === "payer5")?.privateKey ?? "0x";
    const payerAddress = privateKeyToAccount(key).address;
    const x402 = new x402Client()
      .register("eip155:*", new ExactEvmScheme(privateKeyToAccount(key)))
      .setSpendControls({
        allowedAssets: [
          {
            network: devnet.demo.settlement.network as `${string}:${string}`,
            asset: devnet.demo.settlement.usdc.address,
          },
        ],
      });
    const paidFetch = wrapFetchWithPayment(fetch, x402);
    const before = await usdcBalance(chain, devnet, payerAddress);

    const res = await paidFetch(`http://127.0.0.1:${port}/api/chain/call`, { method: "POST", body: "{}" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { meta: Record<string, string> };
    expect(body.meta).toEqual({
      cost_usdc: "0.005",
      payment_chain: "eip155:84532",
      payment_token: devnet.demo.settlement.usdc.address,
    });
    const receipt = decodePaymentResponseHeader(res.headers.get("PAYMENT-RESPONSE") ?? "");
    expect(receipt).toMatchObject({ success: true, network: "eip155:84532" });
    expect(before - (await usdcBalance(chain, devnet, payerAddress))).toBe(priceOf(CALL));

    // A failed upstream call is never charged.
    upstreamFails = true;
    const failed = await paidFetch(`http://127.0.0.1:${port}/api/chain/call`, { method: "POST", body: "{}" });
    expect(failed.status).toBe(503);
    expect(before - (await usdcBalance(chain, devnet, payerAddress))).toBe(priceOf(CALL));
  });
});
