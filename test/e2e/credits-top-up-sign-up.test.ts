// Issue 40, finding 1: buying credits gives no plan volume. A wallet without an account buys credits
// with the official @x402/fetch client (POST /api/credits); the account the top-up makes is credits
// only, so its calls signed in with sign-in-with-x (the official helpers) draw the credits from the
// first call and carry no X-Quota-Day-* headers. The free plan comes only from a dashboard sign-up,
// which applies the sign-up policy: on the shared mesh (sign-up open) the wallet's dashboard sign-in
// moves its account to the free plan; on a mesh of its own with SIGN_UP=closed it signs in and stays
// credits only.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Mesh } from "@tollgate/local";
import { contracts, createClient } from "@tollgate/platform";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import {
  type CompleteSIWxInfo,
  createSIWxPayload,
  encodeSIWxHeader,
  SIGN_IN_WITH_X,
  type SIWxExtension,
} from "@x402/extensions/sign-in-with-x";
import type { Hex } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Wallet } from "../dashboard/support.ts";
import { devnet, sharedSettlementEnv } from "../support/devnet.ts";
import { mesh as shared } from "../support/gateway.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { sendUsdc, x402PayerOfKey } from "../support/x402.ts";

const PATH = "/api/chain/chain-id?network=ethereum";

interface At {
  gatewayUrl: string;
  dashboardUrl: string;
  quotaMeterAddr: string;
  dashboardToken: string;
}

/** quota-meter's AccountService as the dashboard calls it: the account bound to a wallet. */
async function walletAccount(at: At, address: string) {
  const client = createClient(contracts.quotaMeter().AccountService, at.quotaMeterAddr, {
    service: "quota-meter",
    defaultDeadlineMs: 5_000,
    token: at.dashboardToken,
  });
  try {
    return await client.call("ResolveWalletAccount", { address, create: false });
  } finally {
    client.close();
  }
}

/** A call of PATH signed in with sign-in-with-x by `account` (the official helpers sign the proof). */
async function signedInCall(at: At, account: PrivateKeyAccount) {
  const url = `${at.gatewayUrl}${PATH}`;
  const offered = await fetch(url);
  expect(offered.status).toBe(402);
  const required = decodePaymentRequiredHeader(offered.headers.get("payment-required") ?? "");
  const ext = required.extensions?.[SIGN_IN_WITH_X] as SIWxExtension | undefined;
  const chain = ext?.supportedChains[0];
  if (!ext || !chain) throw new Error("the 402 carries no sign-in-with-x extension");
  const info: CompleteSIWxInfo = { ...ext.info, chainId: chain.chainId, type: chain.type };
  const proof = encodeSIWxHeader(await createSIWxPayload(info, account, url));
  const res = await fetch(url, { headers: { "sign-in-with-x": proof } });
  const body = (await res.json()) as { meta?: { cost_usdc?: string } };
  return {
    status: res.status,
    credits: res.headers.get("x-credits-remaining"),
    dayLimit: res.headers.get("x-quota-day-limit"),
    dayUsed: res.headers.get("x-quota-day-used"),
    cost: body.meta?.cost_usdc,
  };
}

/** A fresh wallet that buys 1 USDC of credits with @x402/fetch on `at`'s gateway, no key. */
async function walletThatBoughtCredits(at: At) {
  const key: Hex = generatePrivateKey();
  const account = privateKeyToAccount(key);
  await sendUsdc(devnet, "payer8", account.address, 1_000_000n);
  const bought = await x402PayerOfKey(devnet, key).fetch(`${at.gatewayUrl}/api/credits?amount=1`, {
    method: "POST",
  });
  const body = (await bought.json()) as { data: { account_id: string; account_created: boolean } };
  expect(bought.status, JSON.stringify(body)).toBe(200);
  expect(body.data).toMatchObject({ credit: "credited", balance_usdc: "1", account_created: true });
  return { account, accountId: body.data.account_id };
}

const sharedAt: At = {
  gatewayUrl: shared.gatewayUrl,
  dashboardUrl: shared.dashboardUrl,
  quotaMeterAddr: shared.quotaMeterAddr,
  dashboardToken: readFileSync(join(shared.stateDir, "mesh-token-dashboard"), "utf8").trim(),
};

describe("a wallet's first top-up (sign-up open)", () => {
  it("makes a credits-only account: signed in with sign-in-with-x its calls draw the credits from the first call, no plan volume; its dashboard sign-up then moves it to the free plan", async () => {
    const { account, accountId } = await walletThatBoughtCredits(sharedAt);
    expect(await walletAccount(sharedAt, account.address)).toMatchObject({
      account: { id: accountId, creditsOnly: true },
      signUpPending: true,
    });

    const first = await signedInCall(sharedAt, account);
    expect(first).toMatchObject({
      status: 200,
      credits: "0.999",
      cost: "0.001",
      dayLimit: null,
      dayUsed: null,
    });
    const second = await signedInCall(sharedAt, account);
    expect(second).toMatchObject({ status: 200, credits: "0.998", dayLimit: null });

    // The dashboard sign-in is the wallet's sign-up (open here, within the hourly allowance): the
    // account joins the free plan, keeping its credits for when the plan is spent.
    const signIn = await new Wallet(sharedAt.dashboardUrl, account).signIn();
    expect(signIn.status).toBe(200);
    expect(signIn.body.data).toMatchObject({ account: { id: accountId }, created: false });
    expect(await walletAccount(sharedAt, account.address)).toMatchObject({
      account: { id: accountId, creditsOnly: false, plan: "free" },
      signUpPending: false,
    });
    const onPlan = await signedInCall(sharedAt, account);
    expect(onPlan).toMatchObject({ status: 200, credits: null, dayUsed: "1" });
    expect(Number(onPlan.dayLimit)).toBeGreaterThan(0);
  });
});

describe("a wallet's first top-up on a mesh with SIGN_UP=closed", () => {
  let own: Mesh;
  let at: At;
  beforeAll(async () => {
    const ethereum = devnet.chains.ethereum?.rpcUrl;
    if (!ethereum) throw new Error("the shared devnet has no ethereum chain");
    own = await startOwnMesh({
      stateDir: inject("mesh").stateDir,
      namespace: `signupclosed${process.pid}`,
      env: { LOG_LEVEL: "warn", REDIS_BUDGET_MS: "2000", UPSTREAMS_ETHEREUM: ethereum },
      serviceEnv: {
        dashboard: { SIGN_UP: "closed" },
        "payment-verifier": sharedSettlementEnv("spare5"),
      },
    });
    at = {
      gatewayUrl: own.gatewayUrl,
      dashboardUrl: own.dashboardUrl,
      quotaMeterAddr: `127.0.0.1:${own.ports["quota-meter"].main}`,
      dashboardToken: readFileSync(join(own.stateDir, "mesh-token-dashboard"), "utf8").trim(),
    };
  }, 180_000);
  afterAll(async () => {
    await own?.stop();
  });

  it("gives the top-up's account no plan volume: credits from the first call, before and after its dashboard sign-in", async () => {
    const { account, accountId } = await walletThatBoughtCredits(at);
    const first = await signedInCall(at, account);
    expect(first).toMatchObject({
      status: 200,
      credits: "0.999",
      cost: "0.001",
      dayLimit: null,
      dayUsed: null,
    });

    // Sign-up is closed: the wallet has an account, so it signs in, but joins no plan.
    const signIn = await new Wallet(at.dashboardUrl, account).signIn();
    expect(signIn.status).toBe(200);
    expect(signIn.body.data).toMatchObject({
      account: { id: accountId },
      created: false,
      sign_up_open: false,
    });
    expect(await walletAccount(at, account.address)).toMatchObject({
      account: { id: accountId, creditsOnly: true },
      signUpPending: true,
    });
    const after = await signedInCall(at, account);
    expect(after).toMatchObject({ status: 200, credits: "0.998", dayLimit: null, dayUsed: null });
  });
});
