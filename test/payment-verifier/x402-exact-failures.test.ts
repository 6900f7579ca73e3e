// payment-verifier, x402 scheme `exact`: the challenge it offers, and settlements that fail after
// a valid Verify (a settlement key held elsewhere, a payer that emptied its balance, a transfer
// that reverts all the same). Same fixture as x402-exact.test.ts (x402-exact.support.ts): real
// devnet, facilitator, Redis and JetStream, payloads from the official x402 client libraries.
import { CallError, grpc } from "@tollgate/platform";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { createClient as createRedis } from "redis";
import { createWalletClient, erc20Abi, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { PAYER_PENALTY_MS } from "../../services/payment-verifier/src/schemes/x402-exact.ts";
import { until } from "../support/eventually.ts";
import { metricSumAt } from "../support/gateway.ts";
import {
  BLOCK_NUMBER,
  CALL,
  challenge,
  ERC721_TOKENS,
  headerGetter,
  type Payer,
  pay,
  payerWithKey,
  priceOf,
  settle,
  usdcBalance,
  verify,
} from "./support.ts";
import {
  balances,
  chain,
  client,
  config,
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
      await until(
        "the facilitator's transfer is pending",
        async () =>
          (await chain.getTransactionCount({ address: facilitator, blockTag: "pending" })) !== pending,
        30_000,
        20,
      );
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

describe("settlement events", () => {
  it("records every settlement and release of these failures once in the JetStream stream", async () => {
    await expectEachSettlementOnce();
  });
});
