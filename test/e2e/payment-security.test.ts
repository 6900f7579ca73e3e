// Attacks from the security review (issue 18) performed from outside, against a whole mesh of its
// own: the official x402 client signs, real anvil chains, real Redis and NATS. ethereum is served
// by the shared devnet; every sepolia upstream is dead, so a sepolia call gets no answer. The
// gateway trusts one proxy hop (TRUST_PROXY=1), so X-Forwarded-For names the client.
import { readFileSync } from "node:fs";
import { priceAtomic } from "@tollgate/catalog";
import type { DevnetFile } from "@tollgate/devnet";
import { freePort, type Mesh, meshAdmin } from "@tollgate/local";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { toHex } from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ownDayUsed } from "../support/credits.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { eventually, sleep, until } from "../support/eventually.ts";
import { paymentReleases } from "../support/gateway.ts";
import { assertConforms } from "../support/openapi.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import {
  type Address,
  settlementClient,
  signPayment,
  usdcBalance,
  type X402Payer,
  x402Payer,
} from "../support/x402.ts";
import { batchPayer } from "../support/x402-batch.ts";

const devnet = JSON.parse(readFileSync(inject("mesh").devnetFile, "utf8")) as DevnetFile;
const chain = settlementClient(devnet);
const PAY_TO = devnet.demo.settlement.payTo;
const demo = devnet.demo.ethereum;
const role = (r: string) => devnet.accounts.find((a) => a.role === r)?.address as Address;
let mesh: Mesh;
/** The account of `apiKey`. */
let accountId: string;
let apiKey: string;

beforeAll(async () => {
  const dead = `http://127.0.0.1:${await freePort()}`;
  mesh = await startOwnMesh({
    stateDir: inject("mesh").stateDir,
    namespace: `paysec${process.pid}`,
    onLine: (s, l) => process.env.MESH_LOGS && process.stderr.write(`[${s}] ${l}\n`),
    env: {
      LOG_LEVEL: "warn",
      REDIS_BUDGET_MS: "2000",
      UPSTREAMS_ETHEREUM: devnet.chains.ethereum?.rpcUrl ?? "",
      UPSTREAMS_SEPOLIA: dead,
    },
    serviceEnv: {
      gateway: { EXECUTE_DEADLINE_MS: "3000", TRUST_PROXY: "1" },
      // Settles on the shared devnet's chain with a key of its own, so it never races the shared mesh.
      "payment-verifier": {
        ...sharedSettlementEnv("spare5"),
        // A refill a loaded machine's flood still outruns (one measured at ~75 requests/s), and a
        // burst that holds a round of the replay test below.
        PAYMENT_ATTEMPTS_PER_CLIENT_PER_SECOND: "40",
        PAYMENT_ATTEMPTS_PER_CLIENT_BURST: "120",
      },
    },
  });
  const admin = meshAdmin(mesh);
  const made = await admin.quickstart("paysec");
  apiKey = made.secret;
  accountId = made.account.id;
  admin.close();
});

afterAll(async () => {
  await mesh?.stop();
});

interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: checked against /openapi.json by assertConforms
  body: any;
}

async function send(path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  const res = await fetch(`${mesh.gatewayUrl}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = await res.json();
  await assertConforms(body === undefined ? "get" : "post", path, {
    status: res.status,
    headers: Object.fromEntries(res.headers),
    body: json,
  } as never);
  return { status: res.status, headers: res.headers, body: json };
}

/** A PAYMENT-SIGNATURE for `path`, made by the official client from the mesh's own 402. */
async function sign(payer: X402Payer, path: string, body?: unknown): Promise<string> {
  return signPayment(
    payer,
    `${mesh.gatewayUrl}${path}`,
    body === undefined
      ? undefined
      : { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } },
  );
}

const balances = async (payer: Address) => ({
  payer: await usdcBalance(chain, devnet, payer),
  payTo: await usdcBalance(chain, devnet, PAY_TO),
});

describe("one x402 payment serves one call (finding 1)", () => {
  const blockNumber = "/api/chain/block-number";
  const erc721 = `/api/chain/erc721-tokens?contract=${demo.erc721.address}&address=${role("A")}&max=5`;
  const price = (id: string) => priceAtomic(id === "blockNumber" ? "0.001" : "0.008");

  it.each([
    ["block-number", "payer1"],
    ["block-number", "payer2"],
    ["block-number", "payer3"],
    ["erc721-tokens", "payer4"],
    ["erc721-tokens", "payer7"],
  ])(
    "round %#: one signature for %s sent 40 times with one X-Request-Id, 0-2 ms apart, is served once",
    async (which, who) => {
      // time-based: paces the client: each round starts with its whole attempt budget (40/s, burst 120).
      await sleep(3_000);
      const payer = x402Payer(devnet, who);
      const path = which === "block-number" ? blockNumber : erc721;
      const signature = await sign(payer, path);
      const before = await balances(payer.address);
      const headers = { "PAYMENT-SIGNATURE": signature, "X-Request-Id": "attacker-chosen-id-0001" };
      const inFlight: Promise<Answer>[] = [];
      for (let i = 0; i < 40; i++) {
        inFlight.push(send(path, headers));
        // The cheap signature is also tried on the pricier endpoint in between.
        if (which === "block-number" && i % 8 === 0) inFlight.push(send(erc721, headers));
        // time-based: paces the client: sends 0-2 ms apart (the case under test).
        await sleep(Math.random() * 2);
      }
      const results = await Promise.all(inFlight);
      const served = results.filter((r) => r.status === 200);
      expect(served, JSON.stringify(results.map((r) => [r.status, r.body.error?.message]))).toHaveLength(1);
      for (const r of results.filter((x) => x.status !== 200)) {
        expect(r.status).toBe(402);
        expect(r.body.data).toBeNull();
        expect(r.body.error.code).toBe("payment_invalid");
        expect(r.body.meta.cost_usdc).toBeUndefined();
      }
      expect(served[0]?.body.meta.endpoint).toBe(
        which === "block-number" ? blockNumber : "/api/chain/erc721-tokens",
      );
      expect(new Set(results.map((r) => r.body.meta.request_id)).size).toBe(results.length);
      const after = await balances(payer.address);
      const cost = price(which === "block-number" ? "blockNumber" : "erc721Tokens");
      expect(after.payTo - before.payTo).toBe(cost);
      expect(before.payer - after.payer).toBe(cost);
    },
  );
});

describe("a call that gets no answer costs nothing (the charging rule)", () => {
  it("releases an x402 payment when the node does not answer, and the same signature then buys its call", async () => {
    const payer = x402Payer(devnet, "payer6");
    const signature = await sign(payer, "/api/chain/chain-id");
    const before = await balances(payer.address);
    const dead = await send("/api/chain/chain-id?network=sepolia", { "PAYMENT-SIGNATURE": signature });
    expect(dead.status).toBe(503);
    expect(dead.body).toMatchObject({ data: null, error: { code: "upstream_unavailable" } });
    expect(dead.body.meta.cost_usdc).toBeUndefined();
    expect(dead.headers.get("payment-response")).toBeNull();
    expect(await balances(payer.address)).toEqual(before);

    // The gateway releases after answering; until then the payment reads as in use.
    const served: Answer | undefined = await eventually(
      () => send("/api/chain/chain-id", { "PAYMENT-SIGNATURE": signature }),
      (a) => a.status !== 402 || !/in use/.test(a.body.error?.message),
      30_000,
      100,
    );
    expect(served?.status, JSON.stringify(served?.body)).toBe(200);
    expect(decodePaymentResponseHeader(served?.headers.get("payment-response") ?? "").success).toBe(true);
    const after = await balances(payer.address);
    expect(before.payer - after.payer).toBe(priceAtomic("0.001"));
  });

  it("charges an x402-batch voucher nothing when the node does not answer: the channel accrues only the served calls", async () => {
    const payer = batchPayer(devnet, "payer4");
    const at = (path: string) => payer.fetch(`${mesh.gatewayUrl}${path}`);
    expect((await at("/api/chain/block-number")).status).toBe(200);
    const released = await paymentReleases(mesh);
    const dead = await at("/api/chain/chain-id?network=sepolia");
    expect(dead.status).toBe(503);
    expect(dead.headers.get("payment-response")).toBeNull();
    // The gateway releases the channel after answering.
    await until("the dead call's voucher was released", async () => (await paymentReleases(mesh)) > released);
    const served = await at("/api/chain/block-number");
    expect(served.status, await served.clone().text()).toBe(200);
    const receipt = decodePaymentResponseHeader(served.headers.get("payment-response") ?? "");
    const state = (receipt.extra as { channelState: { chargedCumulativeAmount: string } }).channelState;
    expect(state.chargedCumulativeAmount).toBe(String(2n * priceAtomic("0.001")));
  });

  it("gives an API key's unit back for each call that got no answer, even when every retry reuses one X-Request-Id", async () => {
    const auth = { Authorization: `Bearer ${apiKey}`, "X-Request-Id": "client-retry-id-777" };
    const used = Number((await send("/api/chain/block-number", auth)).headers.get("x-quota-day-used"));
    for (let i = 0; i < 3; i++) {
      expect((await send("/api/chain/block-number?network=sepolia", auth)).status).toBe(503);
    }
    // Refunds are reported in a batch after the responses: read (without counting) until all three
    // landed.
    const at = { stateDir: mesh.stateDir, quotaMeterAddr: `127.0.0.1:${mesh.ports["quota-meter"].main}` };
    expect(await eventually(() => ownDayUsed(at, accountId), used)).toBe(used);
  });
});

describe("payment attempts are limited per client (finding 4)", () => {
  it("answers 429 rate_limited with Retry-After: 1 to a client flooding forged payments, and not to another client", async () => {
    const payer = x402Payer(devnet, "payer5");
    const genuine = await sign(payer, "/api/chain/chain-id");
    // Forged: a random signature for a random payer, so only the client's own limit can stop them.
    const forge = () => {
      const payload = JSON.parse(Buffer.from(genuine, "base64").toString());
      payload.payload.signature = toHex(crypto.getRandomValues(new Uint8Array(65)));
      payload.payload.authorization.from = toHex(crypto.getRandomValues(new Uint8Array(20)));
      return Buffer.from(JSON.stringify(payload)).toString("base64");
    };
    // Waves of 250 at once, over the burst of 120 + 40/s refill; a loaded machine may take over a
    // second to send one, so up to four waves, until the first 429.
    const flood: Awaited<ReturnType<typeof send>>[] = [];
    for (let wave = 0; wave < 4 && !flood.some((r) => r.status === 429); wave++) {
      flood.push(
        ...(await Promise.all(
          Array.from({ length: 250 }, () =>
            send("/api/chain/chain-id", { "PAYMENT-SIGNATURE": forge(), "X-Forwarded-For": "203.0.113.9" }),
          ),
        )),
      );
    }
    const limited = flood.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    for (const r of limited) {
      expect(r.body).toEqual({
        error: "rate_limited",
        message: expect.any(String),
        request_id: expect.any(String),
      });
      expect(r.headers.get("retry-after")).toBe("1");
    }
    expect(flood.filter((r) => r.status === 402).length).toBeGreaterThan(0);
    // Another client behind the same proxy is not limited: its genuine payment is served.
    const other = await send("/api/chain/chain-id", {
      "PAYMENT-SIGNATURE": genuine,
      "X-Forwarded-For": "203.0.113.10",
    });
    expect(other.status, JSON.stringify(other.body)).toBe(200);
  });
});
