// payment-verifier, x402 scheme `exact`, over its gRPC API with payloads made by the official x402
// client libraries (@x402/core client + @x402/evm exact client), settled for real on the devnet's
// settlement chain (anvil) by the in-process facilitator; Redis and NATS JetStream are real too.
import { dirname } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import type { Devnet } from "@tollgate/devnet";
import { CallError, grpc } from "@tollgate/platform";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { authorizationTypes } from "@x402/evm";
import { createClient as createRedis } from "redis";
import { createWalletClient, erc20Abi, http, type PublicClient } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SETTLEMENT_V2, type SettlementEventV2, streamSpecFor } from "../../libs/events/src/index.ts";
import type { PaymentVerifierConfig } from "../../services/payment-verifier/src/config.ts";
import { PAYER_PENALTY_MS } from "../../services/payment-verifier/src/schemes/x402-exact.ts";
import type { PaymentVerifierHandle } from "../../services/payment-verifier/src/server.ts";
import { metricSumAt } from "../support/gateway.ts";
import {
  BLOCK_NUMBER,
  CALL,
  challenge,
  cleanUp,
  devnetConfig,
  ERC721_TOKENS,
  type Header,
  headerGetter,
  type Payer,
  pay,
  payer,
  payerWithKey,
  priceOf,
  settle,
  settlementReader,
  startSettlementDevnet,
  startVerifier,
  uniqueId,
  usdcBalance,
  type VerifierClient,
  verify,
} from "./support.ts";

let devnet: Devnet;
let config: PaymentVerifierConfig;
let verifier: PaymentVerifierHandle;
let client: VerifierClient;
let chain: PublicClient;
let payers: Payer[];
const namespace = uniqueId("pvtest");

/** Settlement outcomes this suite caused, to find in the stream: `${request id}:${outcome}` → outcome. */
const expectedEvents = new Map<string, SettlementEventV2["outcome"]>();

beforeAll(async () => {
  devnet = await startSettlementDevnet();
  // This suite is about exact alone (x402-batch has its own): one offer, one method.
  config = devnetConfig(devnet, { schemes: ["exact"] });
  ({ handle: verifier, client } = await startVerifier(config, { eventsNamespace: namespace }));
  chain = settlementReader(devnet);
  payers = Array.from({ length: 8 }, (_, i) => payer(devnet, `payer${i + 1}`));
});

afterAll(async () => {
  client?.close();
  await verifier?.stop();
  await devnet?.stop();
  if (config)
    await cleanUp({
      redisPrefixes: [config.redisPrefix],
      namespace,
      outboxDirs: [config.outboxDir, dirname(devnet.file)],
    });
});

const payTo = () => config.x402.payTo;
const balances = async (...who: `0x${string}`[]) =>
  Promise.all(who.map((a) => usdcBalance(chain, devnet, a)));

async function payVerifySettle(p: Payer, endpoint: string) {
  const { credentials } = await pay(client, p, endpoint);
  const v = await verify(client, endpoint, credentials);
  expect(v.valid, v.reason).toBe(true);
  const s = await settle(client, endpoint, credentials, v.paymentId, v.requestId);
  if (s.settled) expectedEvents.set(`${v.requestId}:settled`, "settled");
  return { credentials, v, s };
}

describe("Challenge", () => {
  it("offers x402 v2 exact with the endpoint's price, the token's EIP-712 domain and the resource", async () => {
    const headers = await challenge(client, CALL);
    expect(headers.map((h) => h.name)).toEqual(["PAYMENT-REQUIRED"]);
    const pr = decodePaymentRequiredHeader(headers[0]?.value ?? "");
    expect(pr).toMatchObject({
      x402Version: 2,
      error: "Payment required",
      resource: {
        url: `http://127.0.0.1/x${CALL}`,
        description: "Simulated contract call",
        mimeType: "application/json",
      },
    });
    expect(pr.accepts).toEqual([
      {
        scheme: "exact",
        network: "eip155:84532",
        amount: "5000", // 0.005 USD in 6-decimal USDC units
        asset: devnet.demo.settlement.usdc.address,
        payTo: devnet.demo.settlement.payTo,
        maxTimeoutSeconds: 60,
        extra: { name: "USD Coin", version: "2" },
      },
    ]);
  });

  it("carries the given error and prices each endpoint from the catalog", async () => {
    const res = await client.call("Challenge", {
      requestId: "r",
      resource: { endpoint: ERC721_TOKENS, network: "sepolia", url: "http://x/y" },
      error: "payment_expired",
    });
    const pr = decodePaymentRequiredHeader(res.headers[0]?.value ?? "");
    expect(pr.error).toBe("payment_expired");
    expect(pr.accepts[0]?.amount).toBe("8000");
  });

  it("refuses an unknown endpoint as NOT_FOUND", async () => {
    const err = await client
      .call("Challenge", {
        requestId: "r",
        resource: { endpoint: "/api/nope", network: "ethereum", url: "" },
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CallError);
    expect((err as CallError).failure).toMatchObject({ grpcCode: grpc.status.NOT_FOUND, code: "not_found" });
  });

  it("lists x402 exact in DescribeMethods", async () => {
    const res = await client.call("DescribeMethods", {});
    expect(res.methods).toEqual([
      {
        protocol: "x402",
        scheme: "exact",
        method: "", // MPP's payment method (tempo); x402 has none
        network: "eip155:84532",
        asset: devnet.demo.settlement.usdc.address,
        symbol: "USDC",
        decimals: 6,
        payTo: devnet.demo.settlement.payTo,
      },
    ]);
  });
});

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

describe("failed settlement", () => {
  it("a settlement key held by another replica past the wait (15 s) is a 503 to retry, not a refused payment; the payment then settles once", async () => {
    const p = payers[5] as Payer;
    // A settlement first, so the key's nonce (beside its lock) is in Redis.
    expect((await payVerifySettle(p, BLOCK_NUMBER)).s.settled).toBe(true);
    const { credentials } = await pay(client, p, CALL);
    const v = await verify(client, CALL, credentials);
    expect(v.valid, v.reason).toBe(true);
    const facilitator = privateKeyToAccount(
      devnet.accounts.find((a) => a.role === "facilitator")?.privateKey ?? "0x",
    ).address;
    const redis = createRedis({ url: config.redisUrl });
    await redis.connect();
    // The key's lock sits beside its nonce: <prefix>signer:<chain>:<genesis>:<address>:.
    const [nonce] = (await redis.keys(`${config.redisPrefix}signer:*`)).filter((k) =>
      k.endsWith(`:${facilitator.toLowerCase()}:nonce`),
    );
    expect(nonce).toBeDefined();
    const lock = (nonce ?? "").replace(/:nonce$/, ":lock");
    try {
      const before = await balances(p.address, payTo());
      await redis.set(lock, "another-replica", { PX: 60_000 });
      const s = await settle(client, CALL, credentials, v.paymentId, v.requestId);
      expect(s.settled).toBe(false);
      expect(s.errorCode, s.reason).toBe("service_unavailable");
      expect(await balances(p.address, payTo())).toEqual(before);
      // The key is free again: the client's retry (a new request with the same payment) is served.
      await redis.del(lock);
      const again = await verify(client, CALL, credentials);
      expect(again.valid, again.reason).toBe(true);
      const retried = await settle(client, CALL, credentials, again.paymentId, again.requestId);
      expect(retried.settled, retried.reason).toBe(true);
      expectedEvents.set(`${again.requestId}:settled`, "settled");
      const [payerAfter, receiverAfter] = await balances(p.address, payTo());
      expect(payerAfter).toBe((before[0] ?? 0n) - priceOf(CALL));
      expect(receiverAfter).toBe((before[1] ?? 0n) + priceOf(CALL));
    } finally {
      await redis.del(lock);
      await redis.close();
    }
  }, 60_000);

  it("a payer that empties its balance between Verify and Settle: not served, nothing moves, nothing is sent (no gas spent), and the payer is refused for a while", async () => {
    const p = payers[7] as Payer;
    const { credentials } = await pay(client, p, CALL);
    const v = await verify(client, CALL, credentials);
    expect(v.valid).toBe(true);
    // While the call runs, the payer empties its balance: the transfer can no longer succeed.
    const wallet = (role: string) =>
      createWalletClient({
        account: privateKeyToAccount(devnet.accounts.find((a) => a.role === role)?.privateKey ?? "0x"),
        transport: http(devnet.chains.settlement?.rpcUrl),
      });
    const move = async (role: string, to: `0x${string}`, amount: bigint) =>
      chain.waitForTransactionReceipt({
        hash: await wallet(role).writeContract({
          address: devnet.demo.settlement.usdc.address,
          abi: erc20Abi,
          functionName: "transfer",
          args: [to, amount],
          chain: null,
        }),
      });
    const balance = await usdcBalance(chain, devnet, p.address);
    await move("payer8", (payers[6] as Payer).address, balance);
    const before = await balances(payTo());
    const facilitator = privateKeyToAccount(
      devnet.accounts.find((a) => a.role === "facilitator")?.privateKey ?? "0x",
    ).address;
    const sentBefore = await chain.getTransactionCount({ address: facilitator });

    const s = await settle(client, CALL, credentials, v.paymentId, v.requestId);
    expect(s).toMatchObject({ settled: false, errorCode: "payment_invalid" });
    expect(s.reason).toBe(
      "settlement failed: the payer's token balance is too low (invalid_exact_evm_insufficient_balance)",
    );
    const get = headerGetter(s.headers);
    expect(p.http.getPaymentSettleResponse(get)).toMatchObject({ success: false });
    expect(decodePaymentRequiredHeader(get("PAYMENT-REQUIRED") ?? "").error).toBe(s.reason);
    expectedEvents.set(`${v.requestId}:failed`, "failed");
    expect(await balances(payTo())).toEqual(before);
    // Settle simulated the transfer once more before sending it, found the balance gone and sent
    // nothing: the settlement key spent no gas. The penalty answers the attempt.
    expect(s.transaction).toBe("");
    expect(await chain.getTransactionCount({ address: facilitator })).toBe(sentBefore);

    // The payer is refused at Verify (402, a fresh offer), before any check of the payment itself:
    // the same credentials, and a new payment once the balance is back.
    const penalty =
      /^payments from this payer are refused until (\S+): a payment it signed could not be collected after it was verified/;
    const again = await verify(client, CALL, credentials);
    expect(again).toMatchObject({ valid: false, errorCode: "payment_invalid", paymentId: "" });
    expect(again.reason).toMatch(penalty);
    expect(headerGetter(again.headers)("PAYMENT-REQUIRED")).toBeTruthy();
    const until = Date.parse(penalty.exec(again.reason)?.[1] ?? "");
    expect(until - Date.now()).toBeGreaterThan(PAYER_PENALTY_MS - 60_000);
    expect(until - Date.now()).toBeLessThanOrEqual(PAYER_PENALTY_MS);
    await move("payer7", p.address, balance);
    const fresh = await pay(client, p, CALL);
    const refused = await verify(client, CALL, fresh.credentials);
    expect(refused).toMatchObject({ valid: false, errorCode: "payment_invalid", paymentId: "" });
    expect(refused.reason).toMatch(penalty);
    // Shared by every replica: the penalty is in Redis, for this payer and scheme only.
    const redis = createRedis({ url: config.redisUrl });
    await redis.connect();
    try {
      const left = await redis.pTTL(`${config.redisPrefix}penalty:exact:${p.address.toLowerCase()}`);
      expect(left).toBeGreaterThan(PAYER_PENALTY_MS - 60_000);
    } finally {
      await redis.close();
    }
    // Another payer is served as before.
    const other = await payVerifySettle(payers[6] as Payer, CALL);
    expect(other.s.settled).toBe(true);
  });
});

describe("a settlement that reverts all the same", () => {
  it("is counted with its fee: the payer's drain mined in the same block ahead of our transfer, after the check before sending", async () => {
    // The payer drains its balance in the moment between the check just before sending and the
    // send (here: its transfer waits in the mempool with a higher tip, both mined in one block):
    // nothing can stop that transaction, so it is counted, with what it cost, and alerted on.
    const key = generatePrivateKey();
    const p = payerWithKey(devnet, key);
    const rpcUrl = devnet.chains.settlement?.rpcUrl ?? "";
    const wallet = (k: `0x${string}`) =>
      createWalletClient({ account: privateKeyToAccount(k), transport: http(rpcUrl) });
    const funder = devnet.accounts.find((a) => a.role === "payer5")?.privateKey ?? "0x";
    const price = priceOf(CALL);
    const funded = await wallet(funder).writeContract({
      address: devnet.demo.settlement.usdc.address,
      abi: erc20Abi,
      functionName: "transfer",
      args: [p.address, price],
      chain: null,
    });
    await chain.waitForTransactionReceipt({ hash: funded });
    await chain.request({
      method: "anvil_setBalance" as never,
      params: [p.address, "0xde0b6b3a7640000"] as never,
    });
    const { credentials } = await pay(client, p, CALL);
    const v = await verify(client, CALL, credentials);
    expect(v.valid, v.reason).toBe(true);
    const metrics = `http://127.0.0.1:${verifier.metricsPort}/metrics`;
    const reverted = () => metricSumAt(metrics, "payment_settlements_reverted_total", { scheme: "exact" });
    const fees = () =>
      metricSumAt(metrics, "payment_settlement_reverted_fees_wei_total", { scheme: "exact" });
    const [revertedBefore, feesBefore] = [await reverted(), await fees()];
    await chain.request({ method: "evm_setAutomine" as never, params: [false] as never });
    try {
      await wallet(key).writeContract({
        address: devnet.demo.settlement.usdc.address,
        abi: erc20Abi,
        functionName: "transfer",
        args: [devnet.demo.settlement.payTo, price],
        maxPriorityFeePerGas: 10n ** 11n,
        maxFeePerGas: 10n ** 12n,
        chain: null,
      });
      const settling = settle(client, CALL, credentials, v.paymentId, v.requestId);
      // Our transfer reaches the mempool behind the payer's; then one block takes both.
      const facilitator = privateKeyToAccount(
        devnet.accounts.find((a) => a.role === "facilitator")?.privateKey ?? "0x",
      ).address;
      const pending = await chain.getTransactionCount({ address: facilitator, blockTag: "pending" });
      while ((await chain.getTransactionCount({ address: facilitator, blockTag: "pending" })) === pending)
        await new Promise((r) => setTimeout(r, 20));
      await chain.request({ method: "evm_mine" as never, params: [] as never });
      const s = await settling;
      expect(s).toMatchObject({ settled: false, errorCode: "payment_invalid" });
      const receipt = await chain.getTransactionReceipt({ hash: s.transaction as `0x${string}` });
      expect(receipt.status).toBe("reverted");
      expect((await reverted()) - revertedBefore).toBe(1);
      expect(BigInt(Math.round((await fees()) - feesBefore))).toBeGreaterThanOrEqual(
        (receipt.gasUsed * receipt.effectiveGasPrice * 99n) / 100n,
      );
    } finally {
      await chain.request({ method: "evm_setAutomine" as never, params: [true] as never });
    }
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
    const deadline = Date.now() + 15_000;
    while (verifier.pendingEvents() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(verifier.pendingEvents()).toBe(0);

    const nc = await connect({ servers: config.natsUrl });
    try {
      const jsm = await jetstreamManager(nc);
      const stream = streamSpecFor(SETTLEMENT_V2, namespace).name;
      const info = await jsm.streams.info(stream);
      const seen = new Map<string, number>();
      const byCall = new Map<string, number>();
      const events: SettlementEventV2[] = [];
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const msg = await jsm.streams.getMessage(stream, { seq });
        const event = msg?.json<SettlementEventV2>();
        if (!event) continue;
        events.push(event);
        seen.set(event.id, (seen.get(event.id) ?? 0) + 1);
        const call = `${event.request_id}:${event.outcome}`;
        byCall.set(call, (byCall.get(call) ?? 0) + 1);
      }
      for (const [call, outcome] of expectedEvents) {
        expect(byCall.get(call), call).toBe(1);
        expect(call.endsWith(`:${outcome}`)).toBe(true);
      }
      // Event ids are generated by payment-verifier (never a request's id), and each is stored once.
      expect([...seen.values()].every((n) => n === 1)).toBe(true);
      expect(events.every((e) => !e.id.startsWith(`${e.request_id}:`))).toBe(true);
      const settledCount = [...expectedEvents.values()].filter((o) => o === "settled").length;
      expect(events.filter((e) => e.outcome === "settled")).toHaveLength(settledCount);
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
    } finally {
      await nc.close();
    }
  });
});
