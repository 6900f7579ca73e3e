// x402 `exact` through the gateway: the 402 an unpaid call gets (the exact price for every endpoint,
// readable by fetch however long the request), and payments refused with a 402 naming the problem
// (expired, underpaid, wrong network, malformed). Helpers in x402.support.ts.
import { ENDPOINTS, priceAtomic } from "@tollgate/catalog";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { describe, expect, it } from "vitest";
import { sleep } from "../support/eventually.ts";
import { get, mesh, post } from "../support/gateway.ts";
import { x402Payer } from "../support/x402.ts";
import {
  atomic,
  balances,
  demo,
  devnet,
  expectRefused,
  NETWORK,
  PAY_TO,
  role,
  signPayment,
  USDC,
} from "./x402.support.ts";

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
    // time-based: the authorization's validBefore must pass (the expiry under test, set by the chain's clock).
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
});
