import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ENDPOINTS, type Endpoint, endpointById, priceAtomic } from "@tollgate/catalog";
import { readDevnetFile } from "@tollgate/devnet";
import {
  ensureStreams,
  natsSubject,
  SETTLEMENT_V2,
  type SettlementEventV2,
  streamSpecFor,
} from "@tollgate/events";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { decodePaymentResponseHeader, type PaymentRequired } from "@x402/fetch";
import type request from "supertest";
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  http,
  type PublicClient,
  pad,
  parseEventLogs,
  toFunctionSelector,
  toHex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lower } from "../support/addresses.ts";
import { get, mesh, metricSum, post } from "../support/gateway.ts";
import { assertConforms } from "../support/openapi.ts";
import {
  type Address,
  settlementClient,
  settlementNetwork,
  usdcBalance,
  type X402Payer,
  x402Payer,
} from "../support/x402.ts";

const devnet = readDevnetFile(mesh.devnetFile);
const settlement = devnet.demo.settlement;
const USDC = settlement.usdc.address;
const PAY_TO = settlement.payTo;
const NETWORK = settlementNetwork(devnet);
const demo = devnet.demo.ethereum;
const role = (r: string) => devnet.accounts.find((a) => a.role === r)?.address as Address;
const thirdNetwork = Object.keys(devnet.chains).find(
  (n) => !["ethereum", "sepolia", "settlement"].includes(n),
);

const chain: PublicClient = settlementClient(devnet);
const ethereum = createPublicClient({ transport: http(devnet.chains.ethereum?.rpcUrl, { retryCount: 0 }) });
const balance = (owner: Address) => usdcBalance(chain, devnet, owner);
const atomic = (id: string) => priceAtomic(endpoint(id).price, settlement.usdc.decimals);

function endpoint(id: string): Endpoint {
  const found = endpointById(id);
  if (!found) throw new Error(`no endpoint ${id}`);
  return found;
}

/** Every settlement outcome this file caused (settled, released), by gateway request id; checked against JetStream last. */
const settledHere = new Map<string, string>();
const releasedHere = new Set<string>();
let nc: NatsConnection;
let firstSeq = 1;
let stream = "";
let subject = "";

/**
 * The events namespace the mesh's services publish under (each test mesh isolates its streams).
 * MeshInfo does not carry it; deploy/local keeps each service's outbox in outbox/<namespace>/.
 */

beforeAll(async () => {
  const namespace = mesh.eventsNamespace;
  stream = streamSpecFor(SETTLEMENT_V2, namespace).name;
  subject = natsSubject(SETTLEMENT_V2, namespace);
  nc = await connect({ servers: "nats://127.0.0.1:4222" });
  const jsm = await jetstreamManager(nc);
  await ensureStreams(jsm, { namespace, subjects: [SETTLEMENT_V2] });
  firstSeq = (await jsm.streams.info(stream)).state.last_seq + 1;
});

afterAll(async () => {
  await nc?.close();
});

interface Paid {
  status: number;
  headers: Headers;
  body: { data: Record<string, unknown> | null; error: { code: string; message: string } | null; meta: Meta };
}
interface Meta {
  endpoint: string;
  request_id: string;
  cost_usdc?: string;
  payment_chain?: string;
  payment_token?: string;
}

/** A call through the official paying fetch; the answer is checked against /openapi.json too. */
async function payFor(payer: X402Payer, path: string, body?: unknown): Promise<Paid> {
  const res = await payer.fetch(`${mesh.gatewayUrl}${path}`, {
    method: body === undefined ? "GET" : "POST",
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const json = (await res.json()) as Paid["body"];
  const asSupertest = {
    status: res.status,
    headers: Object.fromEntries(res.headers),
    body: json,
  } as unknown as request.Response;
  await assertConforms(body === undefined ? "get" : "post", path, asSupertest);
  return { status: res.status, headers: res.headers, body: json };
}

/** Checks a paid 200: receipt header, meta, no quota headers, and the transfer on chain. */
async function expectSettled(res: Paid, payer: X402Payer, id: string): Promise<string> {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const ep = endpoint(id);
  expect(res.body.error).toBeNull();
  expect(res.body.meta).toEqual({
    endpoint: ep.path,
    request_id: expect.any(String),
    cost_usdc: ep.price,
    payment_chain: NETWORK,
    payment_token: USDC,
  });
  expect([...res.headers.keys()].filter((h) => h.toLowerCase().startsWith("x-quota"))).toEqual([]);
  expect(res.headers.get("cache-control")).toBe("no-store");
  const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
  expect(receipt).toMatchObject({ success: true, network: NETWORK, payer: payer.address });
  const tx = receipt.transaction as `0x${string}`;
  expect(tx).toMatch(/^0x[0-9a-f]{64}$/);

  // The transaction really is one transfer of exactly the price from the payer to payTo.
  const onChain = await chain.getTransactionReceipt({ hash: tx });
  expect(onChain.status).toBe("success");
  const transfers = parseEventLogs({ abi: erc20Abi, logs: onChain.logs, eventName: "Transfer" });
  expect(transfers.map((t) => [t.address.toLowerCase(), t.args.from, t.args.to, t.args.value])).toEqual([
    [USDC.toLowerCase(), payer.address, PAY_TO, atomic(id)],
  ]);
  settledHere.set(res.body.meta.request_id, tx);
  return tx;
}

/** What a client gets from the 402 challenge of `path`, signed by `payer` (after `tamper`). */
async function signPayment(
  payer: X402Payer,
  path: string,
  body?: unknown,
  tamper?: (offer: PaymentRequired) => void,
): Promise<string> {
  const challenge = body === undefined ? await get(path) : await post(path, body);
  expect(challenge.status).toBe(402);
  const offer = payer.http.getPaymentRequiredResponse((name) => challenge.headers[name.toLowerCase()]);
  tamper?.(offer);
  const payload = await payer.http.createPaymentPayload(offer);
  const header = payer.http.encodePaymentSignatureHeader(payload)["PAYMENT-SIGNATURE"];
  if (!header) throw new Error("the client produced no PAYMENT-SIGNATURE");
  return header;
}

/** A refused payment: 402, payment_invalid, a reason matching `reason`, a fresh offer carrying it. */
function expectRefused(res: request.Response, reason: RegExp): void {
  expect(res.status, JSON.stringify(res.body)).toBe(402);
  expect(res.body).toMatchObject({ data: null, error: { code: "payment_invalid" } });
  expect(res.body.error.message).toMatch(reason);
  expect(res.headers["cache-control"]).toBe("no-store");
  expect(res.headers["payment-response"]).toBeUndefined();
  const offer = decodePaymentRequiredHeader(res.headers["payment-required"] ?? "");
  expect(offer.x402Version).toBe(2);
  expect(offer.error).toBe(res.body.error.message);
}

/** The payer's and payTo's token balances. */
async function balances(payer: Address): Promise<{ payer: bigint; payTo: bigint }> {
  const [p, t] = await Promise.all([balance(payer), balance(PAY_TO)]);
  return { payer: p, payTo: t };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("x402 exact through the gateway, paid with the official client libraries", () => {
  it("answers an unpaid call with a 402 whose PAYMENT-REQUIRED offers exactly the price, for every endpoint", async () => {
    for (const ep of ENDPOINTS) {
      const example = ep.example as { path?: Record<string, string>; query?: Record<string, string> };
      const path = ep.path.replace(/\{(\w+)\}/g, (_, k: string) => example.path?.[k] ?? "");
      const qs = example.query ? `?${new URLSearchParams(example.query)}` : "";
      const body = (ep.example as { body?: Record<string, string> }).body ?? {};
      const res = ep.method === "GET" ? await get(`${path}${qs}`) : await post(`${path}${qs}`, body);

      expect(res.status, `${ep.path}: ${JSON.stringify(res.body)}`).toBe(402);
      expect(res.headers["cache-control"]).toBe("no-store");
      // The envelope, plus the problem-details members MPP clients read (README, MPP choices).
      expect(res.body).toEqual({
        data: null,
        error: { code: "payment_required", message: expect.any(String) },
        meta: { endpoint: ep.path, request_id: expect.any(String) },
        type: "https://paymentauth.org/problems/payment-required",
        title: "Payment Required",
        status: 402,
        detail: res.body.error.message,
      });
      expect(res.headers["payment-response"]).toBeUndefined();
      const header = String(res.headers["payment-required"]);
      // Plain base64 of UTF-8 JSON, readable without the library...
      const raw = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
      // ...and as the official decoder reads it.
      const offer = decodePaymentRequiredHeader(header);
      expect(offer).toEqual(raw);
      expect(offer.x402Version).toBe(2);
      expect(offer.resource).toMatchObject({ url: `${mesh.gatewayUrl}${path}${qs}` });
      // exact first (a client that speaks several schemes takes the first it knows), then x402-batch
      // under both its names; every offer at the endpoint's price.
      expect(offer.accepts.map((a) => a.scheme)).toEqual(["exact", "batch-settlement", "x402-batch"]);
      for (const a of offer.accepts) expect(a.amount).toBe(priceAtomic(ep.price, 6).toString());
      expect(offer.accepts[0]).toEqual({
        scheme: "exact",
        network: "eip155:84532",
        amount: priceAtomic(ep.price, 6).toString(),
        asset: USDC,
        payTo: PAY_TO,
        maxTimeoutSeconds: expect.any(Number),
        extra: { name: "USD Coin", version: "2" },
      });
      expect(offer.accepts[0]?.maxTimeoutSeconds).toBeGreaterThan(0);
    }
  });

  it("keeps every 402 readable by fetch when the request target carries ~12 KB the query parser skips: the offer names the validated path and query only", async () => {
    const fox = encodeURIComponent("🦊".repeat(1000)); // 12 KB once percent-encoded
    const ask = async (method: string, target: string, headers: Record<string, string> = {}) => {
      // Node's fetch (undici) refuses response headers past 16 KB: the failure a client saw.
      const res = await fetch(`${mesh.gatewayUrl}${target}`, {
        method,
        headers: { "content-type": "application/json", ...headers },
        body: method === "POST" ? "" : undefined,
      });
      const header = res.headers.get("payment-required");
      return {
        status: res.status,
        body: (await res.json()) as { error: { code: string; parameter?: string } },
        url: header ? decodePaymentRequiredHeader(header).resource?.url : undefined,
      };
    };
    // The fuzz counterexample: a bodiless POST with a payment header is taken as a payment needing
    // no service (an MPP close), before any validation; its refusal carried the whole target.
    const close = await ask("POST", `/api/chain/call?__proto__=${fox}`, { "payment-signature": "" });
    expect(close).toMatchObject({ status: 402, url: `${mesh.gatewayUrl}/api/chain/call` });
    const badPath = await ask("POST", `/api/chain/balance/${fox}?network=sepolia`, {
      "payment-signature": "x",
    });
    expect(badPath).toMatchObject({
      status: 402,
      url: `${mesh.gatewayUrl}/api/chain/balance/{address}?network=sepolia`,
    });
    // Empty pairs past node:querystring's old 1,000-pair cap: the network after them is still read...
    const empty = "&".repeat(12_000);
    const served = await ask("GET", `/api/chain/block-number?${empty}&network=sepolia`);
    expect(served).toMatchObject({
      status: 402,
      url: `${mesh.gatewayUrl}/api/chain/block-number?network=sepolia`,
    });
    // ...and so is an unknown parameter there, refused before any offer.
    const unknown = await ask("GET", `/api/chain/block-number?${empty}&colour=red`);
    expect(unknown).toMatchObject({
      status: 400,
      body: { error: { code: "unknown_parameter", parameter: "colour" } },
      url: undefined,
    });
  });

  it("keeps a refusal's 402 readable by fetch when the PAYMENT-SIGNATURE carries a 10,500-character field: the offers quote the refusal bounded, the body whole", async () => {
    const field = "k".repeat(10_500);
    const payload = {
      x402Version: 2,
      accepted: {
        scheme: "exact",
        network: NETWORK,
        amount: atomic("blockNumber").toString(),
        asset: USDC,
        payTo: PAY_TO,
        maxTimeoutSeconds: 60,
        extra: { name: "USD Coin", version: "2" },
      },
      payload: {
        signature: `0x${"ab".repeat(65)}`,
        authorization: {
          from: role("A"),
          to: PAY_TO,
          value: atomic("blockNumber").toString(),
          validAfter: "0",
          validBefore: "99999999999",
          nonce: `0x${"11".repeat(32)}`,
        },
        [field]: 1,
      },
    };
    const res = await fetch(`${mesh.gatewayUrl}/api/chain/block-number`, {
      headers: { "payment-signature": Buffer.from(JSON.stringify(payload)).toString("base64") },
    });
    expect(res.status).toBe(402);
    // The schema's message names the unknown field: whole in the body...
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("payment_invalid");
    expect(body.error.message).toContain(field);
    // ...and bounded in the offers' headers, which would otherwise pass the 16 KB fetch reads.
    const offer = decodePaymentRequiredHeader(String(res.headers.get("payment-required")));
    expect(offer.error).toMatch(
      /^the exact payload must be an EIP-3009 authorization: payload\.: Unrecognized key/,
    );
    expect(offer.error?.length).toBeLessThanOrEqual(300);
  });

  it("pays once per call at every price, gets the right data, and payTo rises by exactly the price", async () => {
    const payer = x402Payer(devnet, "payer1");
    const A = role("A");
    const B = role("B");
    const cases: { id: string; path: string; body?: unknown; data: (d: Record<string, unknown>) => void }[] =
      [
        {
          id: "blockNumber",
          path: "/api/chain/block-number",
          data: (d) => {
            expect(d.network).toBe("ethereum");
            expect(BigInt(d.block_number as string)).toBeGreaterThanOrEqual(BigInt(demo.seededBlock));
          },
        },
        {
          id: "erc20Balance",
          path: `/api/chain/erc20-balance?address=${A}&contract=${demo.erc20.address}`,
          data: (d) =>
            expect(d).toEqual(
              lower({
                account: A,
                balance: demo.erc20.balances[A],
                decimals: 18,
                symbol: "DEMO",
                token: demo.erc20.address,
              }),
            ),
        },
        {
          id: "estimateGas",
          path: "/api/chain/estimate-gas",
          body: {
            from: demo.estimateGas.from,
            to: demo.estimateGas.to,
            value: toHex(BigInt(demo.estimateGas.value)),
          },
          data: (d) => expect(d).toEqual({ gas_estimate: "0x5208" }),
        },
        {
          id: "call",
          path: "/api/chain/call",
          body: { to: demo.reverter.address, data: toFunctionSelector("ok()") },
          data: (d) => expect(d).toEqual({ result: pad(toHex(42)) }),
        },
        {
          id: "erc721Tokens",
          path: `/api/chain/erc721-tokens?contract=${demo.erc721.address}&address=${B}`,
          data: (d) =>
            expect(d).toEqual(
              lower({
                contract: demo.erc721.address,
                owner: B,
                count: 3,
                balance: "3",
                tokens: ["6", "7", "8"],
              }),
            ),
        },
        {
          id: "balance",
          path: `/api/chain/balance/${B}?network=ethereum`,
          data: (d) => {
            expect(String(d.account).toLowerCase()).toBe(B.toLowerCase());
            expect(d).toMatchObject({ decimals: 18, symbol: "ETH" });
            expect(d.balance).toMatch(/^[0-9]+$/);
          },
        },
        {
          id: "networkInfo",
          path: `/api/chain/network-info?network=${thirdNetwork}`,
          data: (d) => {
            expect(d).toMatchObject({ chain_id: "0x1237", network: thirdNetwork });
            expect(d.block_number).toMatch(/^0x[0-9a-f]+$/);
            expect(d.gas_price).toMatch(/^0x[0-9a-f]+$/);
          },
        },
      ];
    // One endpoint of each distinct price in the catalog.
    expect(new Set(cases.map((c) => endpoint(c.id).price))).toEqual(new Set(ENDPOINTS.map((e) => e.price)));

    const head = await ethereum.getBlockNumber();
    for (const c of cases) {
      const before = await balances(payer.address);
      const res = await payFor(payer, c.path, c.body);
      await expectSettled(res, payer, c.id);
      c.data(res.body.data ?? {});
      if (c.id === "blockNumber") expect(BigInt(res.body.data?.block_number as string)).toBe(head);
      const after = await balances(payer.address);
      expect(after.payTo - before.payTo, c.id).toBe(atomic(c.id));
      expect(before.payer - after.payer, c.id).toBe(atomic(c.id));
    }
    // Exactly one payment went on the wire per call (the 402 round trip carries none).
    expect(payer.paid).toHaveLength(cases.length);
  });

  it("refuses a replayed PAYMENT-SIGNATURE with a 402 naming why, and moves no money", async () => {
    const payer = x402Payer(devnet, "payer2");
    const path = `/api/chain/erc20-balance?address=${role("C")}&contract=${demo.erc20.address}`;
    const first = await payFor(payer, path);
    const tx = await expectSettled(first, payer, "erc20Balance");
    const sent = payer.paid[0]?.signature;
    expect(sent).toBeTruthy();

    const before = await balances(payer.address);
    const replay = await get(path, { "PAYMENT-SIGNATURE": sent ?? "" });
    expectRefused(replay, /already used/);
    expect(replay.body.error.message).toContain(tx);
    // The legacy header name carries the same payment: refused the same way.
    const legacy = await get(path, { "X-PAYMENT": sent ?? "" });
    expectRefused(legacy, /already used/);
    // And at another endpoint of the same price.
    const elsewhere = await get(
      `/api/chain/erc20-balance?address=${role("D")}&contract=${demo.erc20.address}`,
      {
        "PAYMENT-SIGNATURE": sent ?? "",
      },
    );
    expectRefused(elsewhere, /already used/);
    expect(await balances(payer.address)).toEqual(before);
  });

  it("settles 50 concurrent paid calls from five payers, each exactly once", async () => {
    const payers = ["payer3", "payer4", "payer5", "payer6", "payer7"].map((r) => x402Payer(devnet, r));
    const perPayer = 10;
    const price = atomic("blockNumber");
    const before = await Promise.all([PAY_TO, ...payers.map((p) => p.address)].map(balance));

    const results = await Promise.all(
      payers.flatMap((p) =>
        Array.from({ length: perPayer }, async () => ({
          payer: p,
          res: await payFor(p, "/api/chain/block-number"),
        })),
      ),
    );
    const txs = new Set<string>();
    for (const { payer, res } of results) {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
      expect(receipt).toMatchObject({ success: true, network: NETWORK, payer: payer.address });
      expect(res.body.meta.cost_usdc).toBe("0.001");
      txs.add(receipt.transaction);
      settledHere.set(res.body.meta.request_id, receipt.transaction);
    }
    expect(txs.size).toBe(50);
    expect(new Set(results.map((r) => r.res.body.meta.request_id)).size).toBe(50);

    const after = await Promise.all([PAY_TO, ...payers.map((p) => p.address)].map(balance));
    expect((after[0] ?? 0n) - (before[0] ?? 0n)).toBe(50n * price);
    payers.forEach((p, i) => {
      expect((before[i + 1] ?? 0n) - (after[i + 1] ?? 0n), p.role).toBe(BigInt(perPayer) * price);
      expect(p.paid, p.role).toHaveLength(perPayer);
    });
    // Every settlement is its own successful transfer on chain.
    const receipts = await Promise.all(
      [...txs].map((hash) => chain.getTransactionReceipt({ hash: hash as `0x${string}` })),
    );
    expect(receipts.every((r) => r.status === "success")).toBe(true);
  });

  it("charges a revert and a not-found from the node like data: receipt, cost in meta, and the payment is spent", async () => {
    const payer = x402Payer(devnet, "payer8");
    const before = await balances(payer.address);

    const reverted = await payFor(payer, "/api/chain/call", {
      to: demo.reverter.address,
      data: toFunctionSelector("alwaysReverts()"),
    });
    expect(reverted.status, JSON.stringify(reverted.body)).toBe(422);
    expect(reverted.body.error?.code).toBe("execution_reverted");
    expect(reverted.body.error?.message).toContain(demo.reverter.reason);

    const missing = await payFor(payer, "/api/chain/block/0xffffffff");
    expect(missing.status, JSON.stringify(missing.body)).toBe(404);
    expect(missing.body.error?.code).toBe("block_not_found");

    for (const [res, id] of [
      [reverted, "call"],
      [missing, "block"],
    ] as const) {
      expect(res.body.data).toBeNull();
      expect(res.body.meta).toMatchObject({
        cost_usdc: endpoint(id).price,
        payment_chain: NETWORK,
        payment_token: USDC,
      });
      const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
      expect(receipt).toMatchObject({ success: true, network: NETWORK, payer: payer.address });
      settledHere.set(res.body.meta.request_id, receipt.transaction);
    }
    expect(payer.paid.map((p) => p.status)).toEqual([422, 404]);
    const after = await balances(payer.address);
    expect(after.payTo - before.payTo).toBe(atomic("call") + atomic("block"));
    expect(before.payer - after.payer).toBe(atomic("call") + atomic("block"));

    // A revert is no free read: the same signature does not buy the call again.
    const signature = payer.paid[0]?.signature ?? "";
    const again = await post(
      "/api/chain/call",
      { to: demo.reverter.address, data: toFunctionSelector("alwaysReverts()") },
      { "PAYMENT-SIGNATURE": signature },
    );
    expectRefused(again, /already used/);
    expect(again.body.error).not.toHaveProperty("revert_data");
    expect(await balances(payer.address)).toEqual(after);
  });

  it("refuses bad input with 400 before any payment is verified, and the payment stays unspent", async () => {
    const payer = x402Payer(devnet, "payer8");
    const good = `/api/chain/erc20-balance?address=${role("A")}&contract=${demo.erc20.address}`;
    const signature = await signPayment(payer, good);
    const verifies = () =>
      metricSum("payment-verifier", "grpc_server_handling_seconds_count", { grpc_method: "Verify" });
    const verifiesBefore = await verifies();
    const before = await balances(payer.address);

    const bad = await get(`/api/chain/erc20-balance?address=not-an-address&contract=${demo.erc20.address}`, {
      "PAYMENT-SIGNATURE": signature,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "invalid_parameter", parameter: "address" });
    expect(bad.headers["payment-response"]).toBeUndefined();
    const badBody = await post("/api/chain/call", { to: "0x1234" }, { "PAYMENT-SIGNATURE": signature });
    expect(badBody.status).toBe(400);
    expect(await verifies()).toBe(verifiesBefore);
    expect(await balances(payer.address)).toEqual(before);

    // Not reserved, not spent: it still pays for the call it was signed for.
    const res = await get(good, { "PAYMENT-SIGNATURE": signature });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    settledHere.set(
      res.body.meta.request_id,
      decodePaymentResponseHeader(String(res.headers["payment-response"])).transaction,
    );
    expect(await verifies()).toBe(verifiesBefore + 1);
  });

  it("refuses expired, underpaid, wrong-network and malformed payments with a 402 naming the problem", async () => {
    const payer = x402Payer(devnet, "payer8", { extraNetworks: ["eip155:8453"] });
    const blockNumber = "/api/chain/block-number";
    const erc721 = `/api/chain/erc721-tokens?contract=${demo.erc721.address}&address=${role("A")}`;
    const before = await balances(payer.address);

    // Expired: signed for a 1 s window, presented after it closed.
    const expired = await signPayment(payer, blockNumber, undefined, (offer) => {
      if (offer.accepts[0]) offer.accepts[0].maxTimeoutSeconds = 1;
    });
    const validBefore = Number(
      JSON.parse(Buffer.from(expired, "base64").toString()).payload.authorization.validBefore,
    );
    await sleep(Math.max(0, validBefore * 1000 - Date.now()) + 1100);
    expectRefused(await get(blockNumber, { "PAYMENT-SIGNATURE": expired }), /expired/);

    // Underpaid: a signature made for the 0.001 endpoint, sent to the 0.008 one.
    const cheap = await signPayment(payer, blockNumber);
    const under = await get(erc721, { "PAYMENT-SIGNATURE": cheap });
    expectRefused(under, /underpaid/);
    expect(under.body.error.message).toContain(String(atomic("blockNumber")));
    expect(under.body.error.message).toContain(String(atomic("erc721Tokens")));

    // Wrong network: the client signed for Base mainnet instead of the settlement chain.
    const wrongNetwork = await signPayment(payer, blockNumber, undefined, (offer) => {
      if (offer.accepts[0]) offer.accepts[0].network = "eip155:8453";
    });
    const wrong = await get(blockNumber, { "PAYMENT-SIGNATURE": wrongNetwork });
    expectRefused(wrong, /network eip155:8453/);
    expect(wrong.body.error.message).toContain(NETWORK);

    // Malformed: garbage, base64 that is not JSON, JSON that is not a payment payload.
    const b64 = (s: string) => Buffer.from(s).toString("base64");
    expectRefused(await get(blockNumber, { "PAYMENT-SIGNATURE": "%%%garbage%%%" }), /not base64/);
    expectRefused(await get(blockNumber, { "PAYMENT-SIGNATURE": b64("not json at all") }), /JSON/);
    expectRefused(
      await get(blockNumber, { "PAYMENT-SIGNATURE": b64(JSON.stringify({ x402Version: 2, hello: 1 })) }),
      /PaymentPayload/,
    );

    expect(await balances(payer.address)).toEqual(before);
  });

  it("answers 402 without data to payments a balance cannot cover, sending only the transfer it covers", async () => {
    // spare1 holds exactly one call's price; four payments signed at once each look covered alone,
    // but the payer's draws in flight are held within its balance: one is served, the others are
    // refused at Verify (before any node call or transfer), so no settlement reverts.
    const payer = x402Payer(devnet, "spare1");
    const funder = devnet.accounts.find((a) => a.role === "payer8");
    if (!funder) throw new Error("no payer8");
    const price = atomic("blockNumber");
    const wallet = createWalletClient({
      account: privateKeyToAccount(funder.privateKey),
      chain: defineChain({
        id: settlement.chainId,
        name: "settlement",
        nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
        rpcUrls: { default: { http: [devnet.chains.settlement?.rpcUrl ?? ""] } },
      }),
      transport: http(devnet.chains.settlement?.rpcUrl, { retryCount: 0 }),
    });
    const funding = await wallet.writeContract({
      address: USDC,
      abi: erc20Abi,
      functionName: "transfer",
      args: [payer.address, price - (await balance(payer.address))],
    });
    expect((await chain.waitForTransactionReceipt({ hash: funding })).status).toBe("success");
    const before = await balances(payer.address);
    expect(before.payer).toBe(price);

    const path = "/api/chain/block-number";
    const signatures = await Promise.all(Array.from({ length: 4 }, () => signPayment(payer, path)));
    const results = await Promise.all(signatures.map((s) => get(path, { "PAYMENT-SIGNATURE": s })));

    const served = results.filter((r) => r.status === 200);
    expect(served, JSON.stringify(results.map((r) => r.body))).toHaveLength(1);
    const settledTx = decodePaymentResponseHeader(String(served[0]?.headers["payment-response"])).transaction;
    settledHere.set(String(served[0]?.body.meta.request_id), settledTx);
    const refused = results.filter((r) => r.status !== 200);
    for (const res of refused) {
      expect(res.status, JSON.stringify(res.body)).toBe(402);
      expect(res.body).toMatchObject({ data: null, error: { code: "payment_invalid" } });
      expect(res.body.meta.cost_usdc).toBeUndefined();
    }
    // Refused at Verify, saying why: no settlement ran for them (no x402 settlement receipt).
    for (const res of refused) {
      expect(res.body.error.message).toMatch(
        /the payer's balance \(\d+ atomic units\) does not cover this payment|the payer's token balance is too low/,
      );
      expect(res.headers["payment-response"]).toBeUndefined();
    }

    const after = await balances(payer.address);
    expect(after.payer).toBe(0n);
    expect(after.payTo - before.payTo).toBe(price);
  });

  it("records every settlement of this run exactly once in JetStream (tollgate.settlement.v2, the mesh's namespace)", async () => {
    expect(settledHere.size).toBeGreaterThanOrEqual(6 + 1 + 50 + 2);
    const wanted = (events: SettlementEventV2[]) =>
      [...settledHere.keys()].every((id) =>
        events.some((e) => e.request_id === id && e.outcome === "settled"),
      ) &&
      [...releasedHere].every((id) => events.some((e) => e.request_id === id && e.outcome === "released"));
    let events: SettlementEventV2[] = [];
    for (let i = 0; i < 50 && !wanted(events); i++) {
      if (i > 0) await sleep(200);
      events = await readSettlements(firstSeq);
    }
    const ours = events.filter((e) => {
      const id = e.request_id ?? "";
      return settledHere.has(id) || releasedHere.has(id);
    });

    for (const [requestId, tx] of settledHere) {
      const settledEvents = ours.filter((e) => e.request_id === requestId && e.outcome === "settled");
      expect(settledEvents, requestId).toHaveLength(1);
      expect(settledEvents[0]).toMatchObject({
        transaction: tx,
        scheme: "exact",
        asset: USDC,
        payment_network: NETWORK,
        reason: null,
      });
      const ep = ENDPOINTS.find((e) => e.path === settledEvents[0]?.endpoint);
      expect(settledEvents[0]?.amount).toBe(priceAtomic(ep?.price ?? "", 6).toString());
    }
    for (const requestId of releasedHere) {
      const released = ours.filter((e) => e.request_id === requestId);
      expect(
        released.map((e) => e.outcome),
        requestId,
      ).toEqual(["released"]);
      expect(released[0]?.transaction).toBeNull();
    }
    // One transaction per settled event: nothing was settled twice under another request id.
    const txs = ours.filter((e) => e.outcome === "settled").map((e) => e.transaction);
    expect(new Set(txs).size).toBe(txs.length);
    expect(txs).toHaveLength(settledHere.size);
  });
});

/** The settlement events stored from stream sequence `from` on, read with an ordered consumer. */
async function readSettlements(from: number): Promise<SettlementEventV2[]> {
  const jsm = await jetstreamManager(nc);
  const last = (await jsm.streams.info(stream)).state.last_seq;
  if (last < from) return [];
  const consumer = await jetstream(nc).consumers.get(stream, {
    filter_subjects: subject,
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: from,
  });
  const events: SettlementEventV2[] = [];
  try {
    for (;;) {
      const msg = await consumer.next({ expires: 2_000 });
      if (!msg) break;
      events.push(msg.json<SettlementEventV2>());
      if (msg.seq >= last) break;
    }
  } finally {
    await consumer.delete().catch(() => {});
  }
  return events;
}
