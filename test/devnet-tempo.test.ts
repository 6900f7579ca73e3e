// The devnet's Tempo chain proven with nothing but the unmodified official mppx 0.11.0 server and
// client (no Tollgate service): a tiny Node HTTP server with Mppx.create + Store.redis (real Redis,
// own key prefix) offers charge in pathUSD and USDC.e and a USDC.e session on every paid route.
// Real: anvil's Tempo mode (TIP-20 precompiles, fee AMM, expiring nonces). Stand-ins: the TIP-1034
// channel reserve (a contract of ours at the precompile's address) and the devnet's JSON-RPC shim
// that the server's RPC goes through (it seeds each open's expiringNonceHash and runs the Tempo call
// batches anvil's eth_call skips). Clients use anvil directly.
// This file: the chain, the 402, charge, and discovery. Sessions are in
// devnet-tempo-session.test.ts; the fixture in devnet-tempo.support.ts.
import { randomBytes } from "node:crypto";
import { TEMPO_ADDRESSES } from "@tollgate/devnet";
import { Challenge, Credential, Receipt } from "mppx";
import { generate as generateDiscovery, validate as validateDiscovery } from "mppx/discovery";
import { type Hex, maxUint256 } from "viem";
import { getBlockNumber, getCode, getTransactionReceipt, readContract } from "viem/actions";
import { Abis } from "viem/tempo";
import { describe, expect, it } from "vitest";
import {
  account,
  balance,
  base,
  CHAIN_ID,
  chain,
  chargeClient,
  composed,
  devnet,
  mppx,
  PATH_USD,
  PRICES,
  payTo,
  prefix,
  RESERVE,
  type Route,
  raw,
  redis,
  secretKey,
  tempoUrls,
  transactionsFrom,
  USDC_E,
  useTempoDevnet,
} from "./devnet-tempo.support.ts";

describe("Tempo devnet chain (anvil --network tempo) with the unmodified mppx server and client", () => {
  useTempoDevnet();

  it("chain 4217: pathUSD and USDC.e at their mainnet addresses, payers hold 1,000 of each, the fee pool and reserve are in place", async () => {
    expect(await chain().request({ method: "eth_chainId" })).toBe("0x1079");
    expect(devnet.chains.tempo?.rpcUrl).not.toBe(tempoUrls.anvilRpcUrl); // servers use the shim
    expect(devnet.chains.tempo?.contracts).toMatchObject({
      pathUsd: PATH_USD,
      usdce: USDC_E,
      channelReserve: RESERVE,
    });
    expect(PATH_USD).toBe("0x20C0000000000000000000000000000000000000");
    expect(USDC_E).toBe("0x20C000000000000000000000b9537d11c60E8b50");
    const { tempo: demo } = devnet.demo;
    expect([demo.pathUsd.decimals, demo.usdce.decimals]).toEqual([6, 6]);
    expect(demo.usdce.currency).toBe("USD");
    for (const payer of demo.payers) {
      expect(await balance(PATH_USD, payer)).toBe(raw("1000"));
      expect(await balance(USDC_E, payer)).toBe(raw("1000"));
      const allowance = await readContract(chain(), {
        address: USDC_E,
        abi: Abis.tip20,
        functionName: "allowance",
        args: [payer, RESERVE],
      });
      expect(allowance).toBe(maxUint256);
    }
    const pool = await readContract(chain(), {
      address: TEMPO_ADDRESSES.feeManager,
      abi: Abis.feeAmm,
      functionName: "getPool",
      args: [USDC_E, PATH_USD],
    });
    expect(pool.reserveValidatorToken).toBe(BigInt(demo.feePool.reserveValidatorToken));
    expect(pool.reserveValidatorToken > 0n).toBe(true);
    expect((await getCode(chain(), { address: RESERVE }))?.length).toBeGreaterThan(1000);
  });

  it("a paid route answers 402 with three Payment challenges (HMAC ids) and a problem+json body", async () => {
    const res = await fetch(`${base}/dear`);
    expect(res.status).toBe(402);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const body = (await res.json()) as { type: string; status: number };
    expect(body).toMatchObject({ type: "https://paymentauth.org/problems/payment-required", status: 402 });
    const challenges = Challenge.fromResponseList(res);
    expect(challenges.map((c) => [c.method, c.intent, c.request.currency, c.request.amount])).toEqual([
      ["tempo", "charge", PATH_USD, "25000"],
      ["tempo", "charge", USDC_E, "25000"],
      ["tempo", "session", USDC_E, "25000"],
    ]);
    for (const challenge of challenges) {
      expect(challenge.realm).toBe("tollgate-devnet-test");
      expect(challenge.request.methodDetails).toMatchObject({ chainId: CHAIN_ID });
      expect(Challenge.verify(challenge, { secretKey })).toBe(true);
      expect(Challenge.verify(challenge, { secretKey: randomBytes(32).toString("base64") })).toBe(false);
    }
    expect(challenges[2]?.request.methodDetails).toMatchObject({ escrowContract: RESERVE });
  });

  describe("charge", () => {
    for (const [currencyName, currency] of [
      ["pathUSD", PATH_USD],
      ["USDC.e", USDC_E],
    ] as const) {
      for (const route of Object.keys(PRICES) as Route[]) {
        for (const [mode, payloadKind, role] of [
          ["pull", "transaction", "payer1"],
          ["push", "hash", "payer2"],
        ] as const) {
          it(`${currencyName} for ${route} (${PRICES[route]}), ${payloadKind} payload: 200, a receipt, the recipient gets exactly the price`, async () => {
            const { client, sent } = chargeClient(role, currency, mode);
            const before = await balance(currency, payTo);
            const res = await client.fetch(`${base}${route}`);
            expect(res.status).toBe(200);
            expect(await res.json()).toEqual({ served: route });
            const receipt = Receipt.fromResponse(res);
            expect(receipt).toMatchObject({ method: "tempo", status: "success" });
            expect(await balance(currency, payTo)).toBe(before + raw(PRICES[route]));
            const credential = Credential.deserialize(sent.at(-1) ?? "");
            expect(credential.payload).toMatchObject({ type: payloadKind });
            expect(credential.source).toBe(`did:pkh:eip155:${CHAIN_ID}:${account(role).address}`);
            const mined = await getTransactionReceipt(chain(), { hash: receipt.reference as Hex });
            expect(mined.status).toBe("success");
            // The replay claim lives in Redis under mppx's key for the transaction hash.
            expect(await redis.get(`${prefix}mppx:charge:${receipt.reference.toLowerCase()}`)).toContain(
              '"type":"mppx:replay"',
            );
          });
        }
      }
    }

    for (const [mode, payloadKind] of [
      ["pull", "transaction"],
      ["push", "hash"],
    ] as const) {
      it(`a replayed ${payloadKind} credential is refused and moves no money`, async () => {
        const { client, sent } = chargeClient("payer3", USDC_E, mode);
        expect((await client.fetch(`${base}/cheap`)).status).toBe(200);
        const before = await balance(USDC_E, payTo);
        const replay = await fetch(`${base}/cheap`, { headers: { authorization: sent.at(-1) ?? "" } });
        expect(replay.status).toBe(402);
        expect(replay.headers.get("payment-receipt")).toBeNull();
        expect(await replay.json()).toMatchObject({
          type: "https://paymentauth.org/problems/verification-failed",
          detail: expect.stringContaining("already been used"),
        });
        expect(await balance(USDC_E, payTo)).toBe(before);
      });
    }

    it("a credential for the cheap route is refused at the dear one and by an altered challenge, and stays good for its own route", async () => {
      const { client } = chargeClient("payer3", PATH_USD, "pull");
      const credential = await client.createCredential(await fetch(`${base}/cheap`));
      const before = await balance(PATH_USD, payTo);

      const dear = await fetch(`${base}/dear`, { headers: { authorization: credential } });
      expect(dear.status).toBe(402);
      expect(await dear.json()).toMatchObject({
        type: "https://paymentauth.org/problems/invalid-challenge",
        detail: expect.stringContaining("amount does not match"),
      });

      // Raising the amount inside the echoed challenge breaks its HMAC id.
      const parsed = Credential.deserialize(credential);
      const altered = Credential.serialize({
        ...parsed,
        challenge: { ...parsed.challenge, request: { ...parsed.challenge.request, amount: "25000" } },
      });
      const forged = await fetch(`${base}/dear`, { headers: { authorization: altered } });
      expect(forged.status).toBe(402);
      expect(await forged.json()).toMatchObject({
        type: "https://paymentauth.org/problems/invalid-challenge",
        detail: expect.stringContaining("not issued by this server"),
      });
      expect(await balance(PATH_USD, payTo)).toBe(before);

      const own = await fetch(`${base}/cheap`, { headers: { authorization: credential } });
      expect(own.status).toBe(200);
      expect(await balance(PATH_USD, payTo)).toBe(before + raw(PRICES["/cheap"]));
    });

    it("a USDC.e charge from an account without USDC.e is refused before broadcast (the shim runs the Tempo call batch anvil's eth_call skips); mppx answers 500 internal-payment-error", async () => {
      const broke = account("spare1");
      expect(await balance(USDC_E, broke.address)).toBe(0n);
      const { client } = chargeClient("spare1", USDC_E, "pull");
      const before = await balance(USDC_E, payTo);
      const startBlock = await getBlockNumber(chain());
      const res = await client.fetch(`${base}/cheap`);
      expect(res.status).toBe(500);
      expect(await res.json()).toMatchObject({
        type: "https://paymentauth.org/problems/internal-payment-error",
      });
      expect(await balance(USDC_E, payTo)).toBe(before);
      expect(await transactionsFrom(broke.address, startBlock, await getBlockNumber(chain()))).toEqual([]);
    });

    for (const [mode, payloadKind] of [
      ["pull", "transaction"],
      ["push", "hash"],
    ] as const) {
      it(`verify before the work, collect after it (${payloadKind}): a failed call collects nothing and the credential then pays for the retry`, async () => {
        const { client, sent } = chargeClient("payer5", PATH_USD, mode);
        const before = await balance(PATH_USD, payTo);
        const failed = await client.fetch(`${base}/work?outcome=fail`);
        expect(failed.status).toBe(502);
        expect(failed.headers.get("payment-receipt")).toBeNull();
        // transaction: nothing was broadcast. hash: the client's own transfer already landed, but
        // the server has not claimed the hash, so the same credential still pays for one call.
        const movedByClient = payloadKind === "hash" ? raw(PRICES["/cheap"]) : 0n;
        expect(await balance(PATH_USD, payTo)).toBe(before + movedByClient);

        const retry = await fetch(`${base}/work`, { headers: { authorization: sent.at(-1) ?? "" } });
        expect(retry.status).toBe(200);
        expect(Receipt.fromResponse(retry).status).toBe("success");
        expect(await balance(PATH_USD, payTo)).toBe(before + raw(PRICES["/cheap"]));
        const again = await fetch(`${base}/work`, { headers: { authorization: sent.at(-1) ?? "" } });
        expect(again.status).toBe(402);
        expect(await balance(PATH_USD, payTo)).toBe(before + raw(PRICES["/cheap"]));
      });
    }
  });

  it("mppx/discovery turns the composed route into x-payment-info offers its validator accepts", () => {
    const doc = generateDiscovery(mppx, {
      info: { title: "Tollgate devnet test", version: "1.0.0" },
      serviceInfo: { categories: ["blockchain"], docs: { llms: "/llms.txt", apiReference: "/openapi.json" } },
      routes: [{ method: "get", path: "/dear", handler: composed(PRICES["/dear"]) }],
    });
    expect(validateDiscovery(doc)).toEqual([]);
    const operation = (doc.paths as Record<string, Record<string, Record<string, unknown>>>)["/dear"]?.get;
    expect(operation?.responses).toHaveProperty("402");
    expect(operation?.["x-payment-info"]).toMatchObject({
      offers: [
        { amount: "25000", currency: PATH_USD, intent: "charge", method: "tempo" },
        { amount: "25000", currency: USDC_E, intent: "charge", method: "tempo" },
        { amount: "25000", currency: USDC_E, intent: "session", method: "tempo" },
      ],
    });
    expect(
      validateDiscovery({ ...doc, paths: { "/dear": { get: { "x-payment-info": { amount: "0.025" } } } } }),
    ).toEqual(expect.arrayContaining([expect.objectContaining({ message: "Invalid amount" })]));
  });
});
