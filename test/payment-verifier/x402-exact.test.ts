// payment-verifier, x402 scheme `exact`, over its gRPC API with payloads made by the official x402
// client libraries (@x402/core client + @x402/evm exact client), settled for real on the devnet's
// settlement chain (anvil) by the in-process facilitator; Redis and NATS JetStream are real too.
// This file: verifying and settling, refusals, and what the suite's traffic left in the metrics and
// the settlement stream. The challenge and failed settlements are in x402-exact-failures.test.ts;
// the fixture in x402-exact.support.ts.
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { authorizationTypes } from "@x402/evm";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import {
  BLOCK_NUMBER,
  CALL,
  ERC721_TOKENS,
  type Header,
  headerGetter,
  type Payer,
  pay,
  payer,
  priceOf,
  settle,
  uniqueId,
  verify,
} from "./support.ts";
import {
  balances,
  chain,
  client,
  devnet,
  expectEachSettlementOnce,
  expectedEvents,
  payers,
  payTo,
  payVerifySettle,
  useExactVerifier,
  verifier,
} from "./x402-exact.support.ts";

useExactVerifier();

describe("verify and settle", () => {
  it("moves exactly the price from the payer to payTo, once", async () => {
    const p = payers[0] as Payer;
    const [payToBefore, payerBefore] = await balances(payTo(), p.address);
    const { v, s } = await payVerifySettle(p, CALL);

    expect(v).toMatchObject({ valid: true, scheme: "exact", payer: p.address, errorCode: "" });
    expect(v.paymentId).toMatch(/^x402-exact:[0-9a-f]{64}#[0-9a-f-]{36}$/);
    expect(s).toMatchObject({
      settled: true,
      errorCode: "",
      meta: {
        costUsdc: "0.005",
        paymentChain: "eip155:84532",
        paymentToken: devnet.demo.settlement.usdc.address,
      },
    });
    const receipt = p.http.getPaymentSettleResponse(headerGetter(s.headers));
    expect(receipt).toMatchObject({ success: true, network: "eip155:84532", transaction: s.transaction });
    expect(receipt.payer?.toLowerCase()).toBe(p.address.toLowerCase());
    const tx = await chain.getTransactionReceipt({ hash: s.transaction as `0x${string}` });
    expect(tx.status).toBe("success");

    const [payToAfter, payerAfter] = await balances(payTo(), p.address);
    expect((payToAfter ?? 0n) - (payToBefore ?? 0n)).toBe(priceOf(CALL));
    expect((payerBefore ?? 0n) - (payerAfter ?? 0n)).toBe(priceOf(CALL));
  });

  it("refuses a replay after settlement and moves no money", async () => {
    const p = payers[1] as Payer;
    const { credentials, v, s } = await payVerifySettle(p, BLOCK_NUMBER);
    expect(s.settled).toBe(true);
    const before = await balances(payTo(), p.address);

    const replay = await verify(client, BLOCK_NUMBER, credentials);
    expect(replay).toMatchObject({ valid: false, errorCode: "payment_invalid", paymentId: "" });
    expect(replay.reason).toContain("already used");
    expect(replay.reason).toContain(s.transaction);
    // A fresh challenge comes with the refusal, so the client can pay again.
    expect(decodePaymentRequiredHeader(headerGetter(replay.headers)("payment-required") ?? "").error).toBe(
      replay.reason,
    );

    // Settling it again under another request is refused too.
    const again = await settle(client, BLOCK_NUMBER, credentials, v.paymentId, uniqueId("req-"));
    expect(again).toMatchObject({ settled: false, errorCode: "payment_invalid" });

    // The same call's Settle repeated (a gateway retry) gets the same answer, no new transfer.
    const repeated = await settle(client, BLOCK_NUMBER, credentials, v.paymentId, v.requestId);
    expect(repeated).toMatchObject({ settled: true, transaction: s.transaction });

    expect(await balances(payTo(), p.address)).toEqual(before);
  });

  it("lets only one of two concurrent verifies of one payload through", async () => {
    const p = payers[2] as Payer;
    const before = await balances(payTo(), p.address);
    const { credentials } = await pay(client, p, CALL);
    const results = await Promise.all([1, 2, 3, 4].map(() => verify(client, CALL, credentials)));
    const valid = results.filter((r) => r.valid);
    expect(valid).toHaveLength(1);
    for (const r of results.filter((x) => !x.valid)) {
      expect(r).toMatchObject({ errorCode: "payment_invalid" });
      expect(r.reason).toBe("this payment is already in use by another request; sign a new payment");
    }
    // The winner's call failed upstream: release, nothing moved.
    const winner = valid[0] as (typeof results)[number];
    await client.call("Release", {
      requestId: winner.requestId,
      paymentId: winner.paymentId,
      reason: "upstream_error",
    });
    expectedEvents.set(`${winner.requestId}:released`, "released");
    expect(await balances(payTo(), p.address)).toEqual(before);
  });

  it("answers a retried Verify of the same call with the same reservation", async () => {
    const { credentials } = await pay(client, payers[5] as Payer, CALL);
    const first = await verify(client, CALL, credentials);
    const retried = await verify(client, CALL, credentials, first.requestId);
    expect(retried).toMatchObject({ valid: true, paymentId: first.paymentId });
    expect((await verify(client, CALL, credentials)).valid).toBe(false); // another call: in use
    await client.call("Release", { requestId: first.requestId, paymentId: first.paymentId, reason: "test" });
    expectedEvents.set(`${first.requestId}:released`, "released");
  });

  it("after Release the same payment verifies again, and no money moved", async () => {
    const p = payers[3] as Payer;
    const before = await balances(payTo(), p.address);
    const { credentials } = await pay(client, p, ERC721_TOKENS);
    const first = await verify(client, ERC721_TOKENS, credentials);
    expect(first.valid).toBe(true);

    // While reserved, another request cannot use it.
    expect((await verify(client, ERC721_TOKENS, credentials)).valid).toBe(false);
    // A Release from another request does not free it.
    await client.call("Release", { requestId: uniqueId("req-"), paymentId: first.paymentId, reason: "x" });
    expect((await verify(client, ERC721_TOKENS, credentials)).valid).toBe(false);

    await client.call("Release", {
      requestId: first.requestId,
      paymentId: first.paymentId,
      reason: "upstream_timeout",
    });
    expectedEvents.set(`${first.requestId}:released`, "released");
    expect(await balances(payTo(), p.address)).toEqual(before);

    const second = await verify(client, ERC721_TOKENS, credentials);
    expect(second.valid, second.reason).toBe(true);
    // A new reservation: the same payment, held under a new mesh-generated token.
    expect(second.paymentId.split("#")[0]).toBe(first.paymentId.split("#")[0]);
    expect(second.paymentId).not.toBe(first.paymentId);
    // The retried call succeeds this time: settled once.
    const s = await settle(client, ERC721_TOKENS, credentials, second.paymentId, second.requestId);
    expect(s.settled).toBe(true);
    expectedEvents.set(`${second.requestId}:settled`, "settled");
    const after = await balances(payTo(), p.address);
    expect((after[0] ?? 0n) - (before[0] ?? 0n)).toBe(priceOf(ERC721_TOKENS));
  });

  it("settles 50 concurrent payments from 8 payers exactly once each (one facilitator key)", async () => {
    const count = 50;
    const before = await balances(payTo(), ...payers.map((p) => p.address));
    // Each payer signs its share; all verify concurrently, then all settle concurrently.
    const paid = await Promise.all(
      Array.from({ length: count }, (_, i) => pay(client, payers[i % payers.length] as Payer, BLOCK_NUMBER)),
    );
    const verified = await Promise.all(paid.map((p) => verify(client, BLOCK_NUMBER, p.credentials)));
    expect(verified.filter((v) => v.valid)).toHaveLength(count);
    const started = performance.now();
    const settled = await Promise.all(
      verified.map((v, i) =>
        settle(client, BLOCK_NUMBER, paid[i]?.credentials ?? [], v.paymentId, v.requestId),
      ),
    );
    const ms = performance.now() - started;
    for (const [i, s] of settled.entries()) {
      expect(s.settled, s.reason).toBe(true);
      expectedEvents.set(`${verified[i]?.requestId}:settled`, "settled");
    }
    expect(new Set(settled.map((s) => s.transaction)).size).toBe(count);
    const receipts = await Promise.all(
      settled.map((s) => chain.getTransactionReceipt({ hash: s.transaction as `0x${string}` })),
    );
    expect(receipts.every((r) => r.status === "success")).toBe(true);
    // The facilitator's nonces are consecutive: serialized submissions, no gaps, no replacements.
    const nonces = (
      await Promise.all(settled.map((s) => chain.getTransaction({ hash: s.transaction as `0x${string}` })))
    )
      .map((t) => t.nonce)
      .sort((a, b) => a - b);
    expect(nonces.at(-1)! - nonces[0]!).toBe(count - 1);

    const after = await balances(payTo(), ...payers.map((p) => p.address));
    expect((after[0] ?? 0n) - (before[0] ?? 0n)).toBe(BigInt(count) * priceOf(BLOCK_NUMBER));
    for (let i = 0; i < payers.length; i++) {
      const share = BigInt(Math.ceil((count - i) / payers.length));
      expect((before[i + 1] ?? 0n) - (after[i + 1] ?? 0n)).toBe(share * priceOf(BLOCK_NUMBER));
    }
    console.log(`50 concurrent settlements in ${Math.round(ms)} ms`);
  });
});

describe("refusals", () => {
  async function refused(endpoint: string, credentials: Header[]) {
    const v = await verify(client, endpoint, credentials);
    expect(v.valid).toBe(false);
    expect(v.paymentId).toBe("");
    return v;
  }

  it("refuses a payment made for a cheaper endpoint (underpaid)", async () => {
    const p = payers[4] as Payer;
    const before = await balances(payTo(), p.address);
    const { credentials } = await pay(client, p, BLOCK_NUMBER); // 0.001
    const v = await refused(CALL, credentials); // costs 0.005
    expect(v.errorCode).toBe("payment_invalid");
    expect(v.reason).toBe(
      "underpaid: the payment is 1000 atomic units, /api/chain/call costs 5000 (0.005 USD)",
    );
    expect(
      decodePaymentRequiredHeader(headerGetter(v.headers)("PAYMENT-REQUIRED") ?? "").accepts[0]?.amount,
    ).toBe("5000");
    expect(await balances(payTo(), p.address)).toEqual(before);
  });

  it("refuses a payment for another network", async () => {
    const { credentials } = await pay(client, payers[4] as Payer, CALL, (pr) => {
      for (const a of pr.accepts) a.network = "eip155:8453";
    });
    const v = await refused(CALL, credentials);
    expect(v).toMatchObject({
      errorCode: "payment_invalid",
      reason: "the payment is for network eip155:8453, but this API settles on eip155:84532",
    });
  });

  it("refuses a payment to another payTo", async () => {
    const other = devnet.accounts.find((a) => a.role === "spare1")?.address ?? "0x";
    const { credentials } = await pay(client, payers[4] as Payer, CALL, (pr) => {
      for (const a of pr.accepts) a.payTo = other;
    });
    const v = await refused(CALL, credentials);
    expect(v.errorCode).toBe("payment_invalid");
    expect(v.reason).toBe(`the payment pays ${other}, but this API's payTo is ${payTo()}`);
  });

  it("refuses an expired payment", async () => {
    // The official client signs validBefore = now + maxTimeoutSeconds; sign it "two minutes ago".
    const realNow = Date.now;
    Date.now = () => realNow() - 120_000;
    let credentials: Header[];
    try {
      ({ credentials } = await pay(client, payers[4] as Payer, CALL));
    } finally {
      Date.now = realNow;
    }
    const v = await refused(CALL, credentials);
    expect(v.errorCode).toBe("payment_invalid");
    expect(v.reason).toMatch(/^the payment authorization expired at \d{4}-\d\d-\d\dT.*; sign a new payment$/);
  });

  it("refuses a payment that is not valid yet", async () => {
    // The official client always signs validAfter = 0; re-sign its authorization with a future one.
    const role = "payer5";
    const key = devnet.accounts.find((a) => a.role === role)?.privateKey ?? "0x";
    const { payload } = await pay(client, payers[4] as Payer, CALL);
    const auth = (payload.payload as { authorization: Record<string, string> }).authorization;
    const validAfter = String(Math.floor(Date.now() / 1000) + 3600);
    const signature = await privateKeyToAccount(key).signTypedData({
      domain: {
        name: "USD Coin",
        version: "2",
        chainId: 84532,
        verifyingContract: devnet.demo.settlement.usdc.address,
      },
      types: authorizationTypes,
      primaryType: "TransferWithAuthorization",
      message: {
        from: auth.from as `0x${string}`,
        to: auth.to as `0x${string}`,
        value: BigInt(auth.value ?? 0),
        validAfter: BigInt(validAfter),
        validBefore: BigInt(auth.validBefore ?? 0),
        nonce: auth.nonce as `0x${string}`,
      },
    });
    const tampered = { ...payload, payload: { signature, authorization: { ...auth, validAfter } } };
    const credentials = [
      { name: "PAYMENT-SIGNATURE", value: Buffer.from(JSON.stringify(tampered)).toString("base64") },
    ];
    const v = await refused(CALL, credentials);
    expect(v.errorCode).toBe("payment_invalid");
    expect(v.reason).toMatch(/^the payment authorization is not valid until \d{4}-/);
  });

  it("refuses a forged signature through the facilitator, with its reason", async () => {
    const { payload } = await pay(client, payers[4] as Payer, CALL);
    const inner = payload.payload as { signature: string; authorization: Record<string, string> };
    // Same authorization, signed by someone else.
    const forged = await privateKeyToAccount(
      devnet.accounts.find((a) => a.role === "spare2")?.privateKey ?? "0x",
    ).signMessage({ message: "not the authorization" });
    const tampered = { ...payload, payload: { ...inner, signature: forged } };
    const v = await refused(CALL, [
      { name: "Payment-Signature", value: Buffer.from(JSON.stringify(tampered)).toString("base64") },
    ]);
    expect(v).toMatchObject({
      errorCode: "payment_invalid",
      reason: "the signature does not match the authorization (invalid_exact_evm_signature)",
    });
  });

  it("refuses a payer without funds through the facilitator's simulation", async () => {
    const broke = payer(devnet, "spare3");
    const { credentials } = await pay(client, broke, CALL);
    const v = await refused(CALL, credentials);
    expect(v.errorCode).toBe("payment_invalid");
    expect(v.reason).toBe("the payer's token balance is too low (invalid_exact_evm_insufficient_balance)");
  });

  it.each([
    ["bad base64", "%%%not-base64%%%", /is not base64/],
    ["base64 of non-JSON", Buffer.from("hello there").toString("base64"), /does not decode to JSON/],
    [
      "JSON of the wrong shape",
      Buffer.from('{"foo":1}').toString("base64"),
      /is not an x402 v2 PaymentPayload/,
    ],
    ["a JSON array", Buffer.from("[1,2]").toString("base64"), /is not an x402 v2 PaymentPayload/],
    ["an x402 v1 payload", Buffer.from('{"x402Version":1,"scheme":"exact"}').toString("base64"), /v1/],
    ["an empty header", "   ", /is empty/],
    [
      "a non-numeric amount",
      Buffer.from(
        JSON.stringify({
          x402Version: 2,
          accepted: {
            scheme: "exact",
            network: "eip155:84532",
            amount: "1e3",
            asset: "a",
            payTo: "b",
            maxTimeoutSeconds: 60,
          },
          payload: {},
        }),
      ).toString("base64"),
      /accepted\.amount: expected an integer string/,
    ],
  ])("answers a malformed header (%s) with payment_invalid, never an error", async (_, value, reason) => {
    const v = await refused(CALL, [{ name: "payment-signature", value }]);
    expect(v.errorCode).toBe("payment_invalid");
    expect(v.reason).toMatch(reason);
    expect(v.headers.map((h) => h.name)).toEqual(["PAYMENT-REQUIRED"]);
  });

  it("answers a well-formed payload with a broken authorization with payment_invalid", async () => {
    const { payload } = await pay(client, payers[4] as Payer, CALL);
    const broken = { ...payload, payload: { signature: "0x12", authorization: { from: "me" } } };
    const v = await refused(CALL, [
      { name: "PAYMENT-SIGNATURE", value: Buffer.from(JSON.stringify(broken)).toString("base64") },
    ]);
    expect(v.errorCode).toBe("payment_invalid");
    expect(v.reason).toMatch(
      /^the exact payload must be an EIP-3009 authorization: payload\.authorization\./,
    );
  });

  it("refuses a payload that mixes transfer methods", async () => {
    const { payload } = await pay(client, payers[4] as Payer, CALL);
    const mixed = { ...payload, payload: { ...payload.payload, permit2Authorization: { from: "0x" } } };
    const v = await refused(CALL, [
      { name: "PAYMENT-SIGNATURE", value: Buffer.from(JSON.stringify(mixed)).toString("base64") },
    ]);
    expect(v.errorCode).toBe("payment_invalid");
    expect(v.reason).toMatch(/^the exact payload must be an EIP-3009 authorization/);
  });

  it("accepts the v1 header name X-PAYMENT for a v2 payload", async () => {
    const { credentials } = await pay(client, payers[5] as Payer, BLOCK_NUMBER);
    const v = await verify(client, BLOCK_NUMBER, [{ name: "X-PAYMENT", value: credentials[0]?.value ?? "" }]);
    expect(v.valid).toBe(true);
    await client.call("Release", { requestId: v.requestId, paymentId: v.paymentId, reason: "test" });
    expectedEvents.set(`${v.requestId}:released`, "released");
  });

  it("asks for payment when there is none", async () => {
    const v = await refused(CALL, [{ name: "authorization", value: "Bearer nope" }]);
    expect(v.errorCode).toBe("payment_required");
    expect(
      decodePaymentRequiredHeader(headerGetter(v.headers)("PAYMENT-REQUIRED") ?? "").accepts,
    ).toHaveLength(1);
  });

  it("refuses to settle credentials that are not the verified payment", async () => {
    const a = await pay(client, payers[6] as Payer, BLOCK_NUMBER);
    const b = await pay(client, payers[6] as Payer, BLOCK_NUMBER);
    const v = await verify(client, BLOCK_NUMBER, a.credentials);
    const s = await settle(client, BLOCK_NUMBER, b.credentials, v.paymentId, v.requestId);
    expect(s).toMatchObject({ settled: false, errorCode: "payment_invalid" });
    expect(s.reason).toBe("the credentials are not the payment verified as payment_id");
    await client.call("Release", { requestId: v.requestId, paymentId: v.paymentId, reason: "test" });
    expectedEvents.set(`${v.requestId}:released`, "released");
  });
});

describe("metrics", () => {
  it("exposes verify/settle latency and outcomes by scheme, and reservation conflicts", async () => {
    const text = await (await fetch(`http://127.0.0.1:${verifier.metricsPort}/metrics`)).text();
    const sample = (name: string, labels: string) =>
      Number(
        text
          .split("\n")
          .find((l) => l.startsWith(`${name}{`) && labels.split(",").every((kv) => l.includes(kv)))
          ?.split(" ")
          .at(-1) ?? Number.NaN,
      );
    expect(sample("payment_verify_seconds_count", 'scheme="exact",outcome="valid"')).toBeGreaterThan(50);
    expect(
      sample("payment_verify_seconds_count", 'scheme="exact",outcome="payment_invalid"'),
    ).toBeGreaterThan(5);
    expect(sample("payment_settle_seconds_count", 'scheme="exact",outcome="settled"')).toBeGreaterThan(50);
    expect(
      sample("payment_reservation_conflicts_total", 'scheme="exact",operation="verify"'),
    ).toBeGreaterThan(3);
    expect(sample("payment_releases_total", 'scheme="exact"')).toBeGreaterThan(2);
  });
});

describe("settlement events", () => {
  it("records every settlement and release once in the JetStream stream", async () => {
    const events = await expectEachSettlementOnce();
    const one = events.find((e) => e.outcome === "settled" && e.endpoint === CALL);
    expect(one).toMatchObject({
      scheme: "exact",
      network: "ethereum",
      amount: "5000",
      asset: devnet.demo.settlement.usdc.address,
      payment_network: "eip155:84532",
      channel: null,
      reason: null,
    });
    expect(one?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
  });
});
