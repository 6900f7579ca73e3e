// Buying prepaid credits (issue 31, part 2): POST /api/credits on the shared mesh, paid for real with the
// official clients — @x402/fetch (`exact`) on the settlement chain and mppx (`charge`) on the
// devnet's Tempo chain (payment-verifier reaches it through the devnet's JSON-RPC shim, a stand-in
// named in mpp.test.ts). Balances are read where a user's are: the account's credits through
// quota-meter's AccountService (what the dashboard calls) and the X-Credits-Remaining of a call.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CREDIT_TOP_UPS, priceAtomic } from "@tollgate/catalog";
import { readDevnetFile } from "@tollgate/devnet";
import { SETTLEMENT_V2 } from "@tollgate/events";
import { contracts, createClient } from "@tollgate/platform";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { Challenge, Receipt } from "mppx";
import { createWalletClient, erc20Abi, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.ts";
import { eventually } from "../support/eventually.ts";
import { get, mesh, metricSum, post } from "../support/gateway.ts";
import { mppChargePayer, tempoChain, tip20Balance } from "../support/mppx.ts";
import { assertConforms } from "../support/openapi.ts";
import { SUITE_BURST } from "../support/quota.ts";
import { consumerCaughtUp } from "../support/streams.ts";
import { settlementClient, settlementNetwork, usdcBalance, x402Payer } from "../support/x402.ts";
import { batchPayer } from "../support/x402-batch.ts";

const devnet = readDevnetFile(mesh.devnetFile);
const chain = settlementClient(devnet);
const USDC = devnet.demo.settlement.usdc.address;
const PAY_TO = devnet.demo.settlement.payTo;
const NETWORK = settlementNetwork(devnet);
const tempo = tempoChain(devnet);
const USDC_E = devnet.demo.tempo.usdce.address;
const TEMPO_PAY_TO = devnet.demo.tempo.payTo;
const ONE = 1_000_000n;
/** quota-meter's top-up repair: the settlement stream's durable consumer that credits what the gateway did not. */
const REPAIR = "quota-meter-top-ups";
const repairCaughtUp = () => consumerCaughtUp(SETTLEMENT_V2, REPAIR, mesh.eventsNamespace);
const url = (amount = "1") => `${mesh.gatewayUrl}/api/credits?amount=${amount}`;

/** quota-meter's AccountService as the dashboard calls it (its mesh token from the mesh's state dir). */
const accounts = createClient(contracts.quotaMeter().AccountService, mesh.quotaMeterAddr, {
  service: "quota-meter",
  defaultDeadlineMs: 5_000,
  token: readFileSync(join(mesh.stateDir, "mesh-token-dashboard"), "utf8").trim(),
});
afterAll(() => accounts.close());

const creditsOf = async (accountId: string) =>
  BigInt((await accounts.call("GetOwnCredits", { accountId, days: 1 })).balance);
/** The account bound to a wallet, or undefined (quota-meter answers NOT_FOUND). */
const walletAccount = (address: string) =>
  accounts.call("ResolveWalletAccount", { address, create: false }).then(
    (r) => r.account ?? undefined,
    (err: { failure?: { code?: string } }) => {
      if (err.failure?.code === "not_found") return undefined;
      throw err;
    },
  );

interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: checked against /openapi.json by assertConforms
  body: any;
}

/** Reads an answer and checks it against the gateway's own /openapi.json. */
async function answer(res: Response): Promise<Answer> {
  const body = await res.json();
  await assertConforms("post", "/api/credits", {
    status: res.status,
    headers: Object.fromEntries(res.headers),
    body,
  } as never);
  return { status: res.status, headers: res.headers, body };
}

/** A wallet of its own on the settlement chain, funded with `usdc` atomic units by `from`. */
async function freshWallet(from: string, usdc: bigint) {
  const key = generatePrivateKey();
  const funder = devnet.accounts.find((a) => a.role === from);
  if (!funder) throw new Error(`no devnet account ${from}`);
  const wallet = createWalletClient({
    account: privateKeyToAccount(funder.privateKey),
    transport: http(devnet.chains.settlement?.rpcUrl, { retryCount: 0 }),
  });
  const address = privateKeyToAccount(key).address;
  const hash = await wallet.writeContract({
    address: USDC,
    abi: erc20Abi,
    functionName: "transfer",
    args: [address, usdc],
    chain: null,
  });
  await chain.waitForTransactionReceipt({ hash });
  const payer = x402Payer(
    { ...devnet, accounts: [...devnet.accounts, { role: "fresh", address, privateKey: key }] },
    "fresh",
  );
  return payer;
}

describe("POST /api/credits without a payment", () => {
  it("answers 402 with offers for exactly the amount asked, x402 exact and MPP charge only", async () => {
    for (const amount of CREDIT_TOP_UPS) {
      const res = await fetch(url(amount), { method: "POST" });
      const challenges = Challenge.fromResponseList(res);
      const a = await answer(res);
      expect(a.status).toBe(402);
      expect(a.body.error.code).toBe("payment_required");
      expect(a.body.error.message).toMatch(
        new RegExp(`^payment required: ${amount} USDC of prepaid credits`),
      );
      const x402 = decodePaymentRequiredHeader(a.headers.get("payment-required") ?? "");
      expect(x402.accepts.map((o) => [o.scheme, o.amount, o.asset, o.payTo])).toEqual([
        ["exact", String(priceAtomic(amount)), USDC, PAY_TO],
      ]);
      expect(x402.resource?.url).toMatch(new RegExp(`/api/credits\\?amount=${amount}$`));
      expect(challenges.map((c) => [c.intent, c.request.amount, c.request.recipient])).toEqual([
        ["charge", String(priceAtomic(amount)), TEMPO_PAY_TO],
        ["charge", String(priceAtomic(amount)), TEMPO_PAY_TO],
      ]);
    }
  });

  it("defaults to 1 USDC; another amount or parameter is a 400 naming it, before anything else", async () => {
    const a = await answer(await fetch(`${mesh.gatewayUrl}/api/credits`, { method: "POST" }));
    expect(decodePaymentRequiredHeader(a.headers.get("payment-required") ?? "").accepts[0]?.amount).toBe(
      String(ONE),
    );
    for (const [query, code, parameter] of [
      ["amount=2", "invalid_parameter", "amount"],
      ["amount=1.0", "invalid_parameter", "amount"],
      ["amount=1&amount=5", "invalid_parameter", "amount"],
      ["amonut=1", "unknown_parameter", "amonut"],
    ] as const) {
      const res = await post(`/api/credits?${query}`, "", { authorization: "Bearer not-a-known-key" });
      expect(res.status, query).toBe(400);
      expect(res.body.error).toMatchObject({ code, parameter });
      expect(res.headers["payment-required"]).toBeUndefined();
    }
  });

  it("an unknown API key is 401 before any payment is looked at: nothing moves", async () => {
    const payer = x402Payer(devnet, "payer3");
    const before = await usdcBalance(chain, devnet, payer.address);
    const res = await payer.fetch(url(), {
      method: "POST",
      headers: { authorization: "Bearer tg_live_unknownunknownunknownunknown" },
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("invalid_api_key");
    expect(payer.paid).toHaveLength(0);
    expect(await usdcBalance(chain, devnet, payer.address)).toBe(before);
  });
});

describe("the top-ups in the documents, from the catalog", () => {
  it("/api/pricing lists the amounts and what pays for them; /openapi.json has the route with its offers; llms.txt says how to buy", async () => {
    const pricing = await get("/api/pricing");
    expect(pricing.body.data.credits).toMatchObject({
      top_ups_usdc: [...CREDIT_TOP_UPS],
      top_ups: CREDIT_TOP_UPS.map((a) => ({
        amount_usdc: a,
        amount_usdc_atomic: String(priceAtomic(a)),
        path: `/api/credits?amount=${a}`,
      })),
    });
    expect(pricing.body.data.credits.payment_methods.map((m: { scheme: string }) => m.scheme)).toEqual([
      "exact",
      "charge",
      "charge",
    ]);
    const doc = (await get("/openapi.json")).body;
    const op = doc.paths["/api/credits"].post;
    expect(op.parameters.map((p: { name: string }) => p.name)).toEqual(["amount", "X-Api-Key"]);
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["200", "202", "400", "401", "402"]));
    expect(
      op["x-payment-info"].offers
        .filter((o: { amount: string }) => o.amount === String(priceAtomic("20")))
        .map((o: { intent: string }) => o.intent),
    ).toEqual(["exact", "charge", "charge"]);
    const llms = (await get("/llms.txt")).text;
    expect(llms).toContain(`POST ${mesh.gatewayUrl}/api/credits?amount=1|5|20`);
  });
});

describe("a top-up paid with a channel's credential", () => {
  it("an x402-batch payment (the official batch-settlement client's, signed for a chain call) is refused 402 naming the schemes a top-up takes; nothing moves", async () => {
    const payer = batchPayer(devnet, "payer7");
    const offered = await fetch(`${mesh.gatewayUrl}/api/chain/chain-id`);
    const offer = payer.http.getPaymentRequiredResponse((name) => offered.headers.get(name) ?? undefined);
    const signature = payer.http.encodePaymentSignatureHeader(await payer.http.createPaymentPayload(offer))[
      "PAYMENT-SIGNATURE"
    ];
    const before = await usdcBalance(chain, devnet, payer.address);
    const payTo = await usdcBalance(chain, devnet, PAY_TO);
    const a = await answer(
      await fetch(url("1"), { method: "POST", headers: { "payment-signature": signature ?? "" } }),
    );
    expect(a.status).toBe(402);
    expect(a.body.error).toMatchObject({ code: "payment_invalid" });
    expect(a.body.error.message).toMatch(/is paid with exact, mpp-charge only, not x402-batch/);
    expect(
      decodePaymentRequiredHeader(a.headers.get("payment-required") ?? "").accepts.map((o) => o.scheme),
    ).toEqual(["exact"]);
    expect(await usdcBalance(chain, devnet, payer.address)).toBe(before);
    expect(await usdcBalance(chain, devnet, PAY_TO)).toBe(payTo);
  });
});

describe("topping up 1 USDC with x402 exact (official @x402/fetch)", () => {
  it("a new wallet: payTo +1,000,000 exactly, a credits-only account made holding exactly 1,000,000 (no plan volume); the same payment again is refused and credits nothing", async () => {
    const payer = await freshWallet("payer3", 3n * ONE);
    expect(await walletAccount(payer.address)).toBeUndefined();
    const payTo = await usdcBalance(chain, devnet, PAY_TO);
    const a = await answer(await payer.fetch(url("1"), { method: "POST" }));
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    expect(a.body.data).toEqual({
      credit: "credited",
      account_id: expect.any(String),
      credited_usdc: "1",
      balance_usdc: "1",
      account_created: true,
    });
    expect(a.body.meta).toMatchObject({
      endpoint: "/api/credits",
      cost_usdc: "1",
      payment_chain: NETWORK,
      payment_token: USDC,
    });
    const receipt = decodePaymentResponseHeader(a.headers.get("payment-response") ?? "");
    expect(receipt).toMatchObject({ success: true, network: NETWORK, payer: payer.address });
    expect(await usdcBalance(chain, devnet, PAY_TO)).toBe(payTo + ONE);
    expect(await usdcBalance(chain, devnet, payer.address)).toBe(2n * ONE);
    const account = await walletAccount(payer.address);
    expect(account).toMatchObject({ id: a.body.data.account_id, creditsOnly: true });
    expect(await creditsOf(a.body.data.account_id)).toBe(ONE);

    // The client's own PAYMENT-SIGNATURE sent again: used, refused, nothing credited or moved.
    const again = await answer(
      await fetch(url("1"), {
        method: "POST",
        headers: { "payment-signature": payer.paid.at(-1)?.signature ?? "" },
      }),
    );
    expect(again.status).toBe(402);
    expect(again.body.error.message).toMatch(/already used/);
    expect(await usdcBalance(chain, devnet, PAY_TO)).toBe(payTo + ONE);
    expect(await creditsOf(a.body.data.account_id)).toBe(ONE);

    // A second top-up of the same wallet lands on the same account.
    const second = await answer(await payer.fetch(url("1"), { method: "POST" }));
    expect(second.status).toBe(200);
    expect(second.body.data).toMatchObject({
      account_id: a.body.data.account_id,
      balance_usdc: "2",
      account_created: false,
    });
    expect(await creditsOf(a.body.data.account_id)).toBe(2n * ONE);
  });

  it("with an API key (Authorization: Bearer): that key's account is credited, and once its daily window is spent its calls draw from the credits", async () => {
    const { accountId, apiKey } = await createAccountWithKey({ daily: 1, burst: SUITE_BURST });
    const payer = x402Payer(devnet, "payer4");
    const payTo = await usdcBalance(chain, devnet, PAY_TO);
    const a = await answer(
      await payer.fetch(url("1"), { method: "POST", headers: { authorization: `Bearer ${apiKey}` } }),
    );
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    expect(a.body.data).toEqual({
      credit: "credited",
      account_id: accountId,
      credited_usdc: "1",
      balance_usdc: "1",
      account_created: false,
    });
    expect(await usdcBalance(chain, devnet, PAY_TO)).toBe(payTo + ONE);
    expect(await creditsOf(accountId)).toBe(ONE);
    // The payer's wallet got no account of its own from this: the key's account was credited.
    expect((await walletAccount(payer.address))?.id).not.toBe(accountId);

    // The daily window holds one call; the next ones are paid from the credits (chain-id: 0.001).
    const call = () =>
      fetch(`${mesh.gatewayUrl}/api/chain/chain-id`, { headers: { authorization: `Bearer ${apiKey}` } });
    const onPlan = await call();
    expect(onPlan.status).toBe(200);
    expect(onPlan.headers.get("x-credits-remaining")).toBeNull();
    const drew = await call();
    expect(drew.status).toBe(200);
    expect(drew.headers.get("x-credits-remaining")).toBe("0.999");
    expect(((await drew.json()) as { meta: { cost_usdc: string } }).meta.cost_usdc).toBe("0.001");
    const drewAgain = await call();
    expect(drewAgain.headers.get("x-credits-remaining")).toBe("0.998");
  });
});

describe("topping up 1 USDC with MPP charge (official mppx client)", () => {
  it("with an API key in X-Api-Key: the recipient +1,000,000 USDC.e exactly, the key's account +1,000,000 exactly, a receipt; the same credential again credits nothing", async () => {
    const { accountId, apiKey } = await createAccountWithKey({ burst: SUITE_BURST });
    const payer = mppChargePayer(devnet, "payer5", USDC_E);
    const before = await tip20Balance(tempo.anvilRpcUrl, USDC_E, TEMPO_PAY_TO);
    const res = await payer.fetch(url("1"), { method: "POST", headers: { "x-api-key": apiKey } });
    const a = await answer(res);
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    expect(a.body.data).toEqual({
      credit: "credited",
      account_id: accountId,
      credited_usdc: "1",
      balance_usdc: "1",
      account_created: false,
    });
    expect(a.body.meta).toMatchObject({ cost_usdc: "1", payment_token: USDC_E });
    expect(Receipt.fromResponse(res)).toMatchObject({ method: "tempo", status: "success" });
    expect(await tip20Balance(tempo.anvilRpcUrl, USDC_E, TEMPO_PAY_TO)).toBe(before + ONE);
    expect(await creditsOf(accountId)).toBe(ONE);

    const again = await answer(
      await fetch(url("1"), {
        method: "POST",
        headers: { authorization: payer.sent.at(-1) ?? "", "x-api-key": apiKey },
      }),
    );
    expect(again.status).toBe(402);
    expect(await tip20Balance(tempo.anvilRpcUrl, USDC_E, TEMPO_PAY_TO)).toBe(before + ONE);
    expect(await creditsOf(accountId)).toBe(ONE);
  });

  it("a wallet alone: the account bound to the payer is credited exactly 1,000,000 more", async () => {
    const payer = mppChargePayer(devnet, "payer6", USDC_E);
    const first = await answer(await payer.fetch(url("1"), { method: "POST" }));
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const accountId = first.body.data.account_id as string;
    expect((await walletAccount(payer.account.address))?.id).toBe(accountId);
    const balance = await creditsOf(accountId);
    const before = await tip20Balance(tempo.anvilRpcUrl, USDC_E, TEMPO_PAY_TO);
    const second = await answer(await payer.fetch(url("1"), { method: "POST" }));
    expect(second.status).toBe(200);
    expect(second.body.data).toMatchObject({ account_id: accountId, account_created: false });
    expect(await tip20Balance(tempo.anvilRpcUrl, USDC_E, TEMPO_PAY_TO)).toBe(before + ONE);
    expect(await creditsOf(accountId)).toBe(balance + ONE);
  });
});

describe("the settlement stream's repair does not credit what the gateway credited", () => {
  it("past the repair's wait, every top-up above is still credited once (quota_top_ups_repaired_total 0)", async () => {
    const { accountId, apiKey } = await createAccountWithKey({ burst: SUITE_BURST });
    const payer = x402Payer(devnet, "payer7");
    // Every event of the tests above handled first, so the next one the repair acks is this top-up's.
    expect(await eventually(repairCaughtUp, true, 40_000)).toBe(true);
    const handled = () =>
      metricSum("quota-meter", "events_consumed_total", { consumer: REPAIR, result: "ok" });
    const handledBefore = await handled();
    const a = await answer(
      await payer.fetch(url("1"), { method: "POST", headers: { authorization: `Bearer ${apiKey}` } }),
    );
    expect(a.status).toBe(200);
    // quota-meter reads the top-up's settlement event once it is 10 s old (retried every 5 s): wait
    // until it has acked it and every other.
    expect(
      await eventually(
        async () => (await handled()) > handledBefore && (await repairCaughtUp()),
        true,
        40_000,
      ),
    ).toBe(true);
    expect(await creditsOf(accountId)).toBe(ONE);
    expect(await metricSum("quota-meter", "quota_top_ups_repaired_total")).toBe(0);
    expect(
      await metricSum("quota-meter", "events_consumed_total", {
        consumer: REPAIR,
        result: "ok",
      }),
    ).toBeGreaterThan(0);
  }, 90_000);
});
