// A top-up that settled but whose credit call never happened is credited from the settlement stream,
// once (issue 31). A mesh of its own settling on the shared devnet; the payer pays with the official
// @x402/fetch client. The settlement's transfer is held at the chain (a JSON-RPC proxy in front of
// payment-verifier's settlement node) until the gateway's link to quota-meter is cut — a TCP proxy
// this file owns, the stand-in for a gateway that dies or loses quota-meter between Settle and
// CreditTopUp — then let through: the payer has paid, the gateway cannot credit.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createAdminClient } from "@tollgate/cli/clients/quota-admin";
import { readDevnetFile } from "@tollgate/devnet";
import { SETTLEMENT_V2 } from "@tollgate/events";
import { freePort, type Mesh } from "@tollgate/local";
import { contracts, createClient } from "@tollgate/platform";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { createWalletClient, erc20Abi, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CountingProxy } from "../support/counting-proxy.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { eventually, until } from "../support/eventually.ts";
import { metricSumAt } from "../support/gateway.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { consumerCaughtUp } from "../support/streams.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";
import { settlementClient, usdcBalance, type X402Payer, x402Payer } from "../support/x402.ts";

const shared = inject("mesh");
const devnet = readDevnetFile(shared.devnetFile);
const chain = settlementClient(devnet);
const PAY_TO = devnet.demo.settlement.payTo;
const ONE = 1_000_000n;

let mesh: Mesh;
let settlementNode: CountingProxy;
let link: Awaited<ReturnType<typeof tcpProxy>>;
let gateway: string;
let accounts: ReturnType<typeof accountService>;

function accountService(addr: string) {
  return createClient(contracts.quotaMeter().AccountService, addr, {
    service: "quota-meter",
    defaultDeadlineMs: 5_000,
    token: readFileSync(join(shared.stateDir, "mesh-token-dashboard"), "utf8").trim(),
  });
}

beforeAll(async () => {
  settlementNode = await new CountingProxy(devnet.chains.settlement?.rpcUrl ?? "").listen();
  mesh = await startOwnMesh({
    stateDir: shared.stateDir,
    namespace: `credrepair${process.pid}`,
    env: {
      LOG_LEVEL: "warn",
      UPSTREAMS_ETHEREUM: devnet.chains.ethereum?.rpcUrl ?? "",
      UPSTREAMS_SEPOLIA: devnet.chains.sepolia?.rpcUrl ?? "",
    },
    serviceEnv: {
      "payment-verifier": {
        ...sharedSettlementEnv("spare3"),
        X402_SETTLEMENT_RPC_URL: settlementNode.url("/"),
      },
    },
  });
  link = await tcpProxy(mesh.ports["quota-meter"].main);
  gateway = (
    await mesh.spawnGateway({
      QUOTA_METER_ADDR: `127.0.0.1:${link.port}`,
      METRICS_PORT: String(await freePort()),
    })
  ).url;
  accounts = accountService(`127.0.0.1:${mesh.ports["quota-meter"].main}`);
}, 180_000);

afterAll(async () => {
  settlementNode?.release();
  accounts?.close();
  await mesh?.stop();
  await link?.close();
  await settlementNode?.close();
});

const creditsOf = async (accountId: string) =>
  BigInt((await accounts.call("GetOwnCredits", { accountId, days: 1 })).balance);
const repaired = () =>
  metricSumAt(
    `http://127.0.0.1:${mesh.ports["quota-meter"].metrics}/metrics`,
    "quota_top_ups_repaired_total",
  );

/** `probe()`'s first answer that is not undefined; throws, naming `what`, after `ms`. */
async function found<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 40_000) {
  const got = await eventually(probe, (v) => v !== undefined, ms);
  if (got === undefined) throw new Error(`timed out waiting until ${what}`);
  return got;
}

/** quota-meter's top-up repair has acked every settlement event: none is pending or to come again. */
const repairCaughtUp = () =>
  consumerCaughtUp(SETTLEMENT_V2, "quota-meter-top-ups", `credrepair${process.pid}`);

/** A wallet of its own, funded with 2 USDC by payer8. */
async function freshPayer(): Promise<X402Payer> {
  const key = generatePrivateKey();
  const funder = devnet.accounts.find((a) => a.role === "payer8");
  if (!funder) throw new Error("no payer8");
  const wallet = createWalletClient({
    account: privateKeyToAccount(funder.privateKey),
    transport: http(devnet.chains.settlement?.rpcUrl, { retryCount: 0 }),
  });
  const address = privateKeyToAccount(key).address;
  const hash = await wallet.writeContract({
    address: devnet.demo.settlement.usdc.address,
    abi: erc20Abi,
    functionName: "transfer",
    args: [address, 2n * ONE],
    chain: null,
  });
  await chain.waitForTransactionReceipt({ hash });
  return x402Payer(
    { ...devnet, accounts: [...devnet.accounts, { role: "fresh", address, privateKey: key }] },
    "fresh",
  );
}

/**
 * Tops up 1 USDC through the gateway, its transfer held at the chain until the gateway's link to
 * quota-meter is cut; the answer, once the transfer went through.
 */
async function topUpWithTheCreditCallCut(payer: X402Payer, headers: Record<string, string> = {}) {
  await link.restore();
  const mark = settlementNode.requests.length;
  settlementNode.holdOnly = ["eth_sendRawTransaction"];
  settlementNode.mode = "hold";
  const answer = payer.fetch(`${gateway}/api/credits?amount=1`, { method: "POST", headers });
  await found("the settlement's transfer reached the chain", () =>
    settlementNode.since(mark).some((r) => r.methods.includes("eth_sendRawTransaction")) ? true : undefined,
  );
  await link.cut();
  settlementNode.release();
  const res = await answer;
  return {
    res,
    body: (await res.json()) as { data: Record<string, unknown>; meta: Record<string, unknown> },
  };
}

describe("a settled top-up the gateway could not credit (stand-in: its link to quota-meter cut by a TCP proxy after the payment settled)", () => {
  it("a new wallet: answered 202 with the receipt; the account is made and credited exactly 1,000,000 from the settlement stream, once", async () => {
    const payer = await freshPayer();
    const payTo = await usdcBalance(chain, devnet, PAY_TO);
    const before = await repaired();
    const { res, body } = await topUpWithTheCreditCallCut(payer);
    expect(res.status, JSON.stringify(body)).toBe(202);
    expect(body.data).toEqual({
      credit: "pending",
      account_id: null,
      credited_usdc: "1",
      balance_usdc: null,
      account_created: false,
    });
    expect(body.meta).toMatchObject({ cost_usdc: "1" });
    expect(decodePaymentResponseHeader(res.headers.get("payment-response") ?? "")).toMatchObject({
      success: true,
      payer: payer.address,
    });
    expect(await usdcBalance(chain, devnet, PAY_TO)).toBe(payTo + ONE);

    const account = await found("the wallet's account is credited", async () => {
      const found = await accounts
        .call("ResolveWalletAccount", { address: payer.address, create: false })
        .then((r) => r.account ?? undefined)
        .catch(() => undefined);
      return found && (await creditsOf(found.id)) > 0n ? found : undefined;
    });
    // Made by the top-up: credits only, no plan volume (issue 40).
    expect(account).toMatchObject({ creditsOnly: true });
    expect(await creditsOf(account.id)).toBe(ONE);
    expect(await repaired()).toBe(before + 1);
    // Redelivered or not, the stream credits it once: once the repair has acked every event (none
    // is left to come again), the balance stays.
    await until("the repair consumer acked every event", repairCaughtUp, 40_000, 250);
    expect(await creditsOf(account.id)).toBe(ONE);
  }, 90_000);

  it("with an API key: the key's account (carried by the settlement event) is credited exactly 1,000,000, once", async () => {
    const admin = createAdminClient(`127.0.0.1:${mesh.ports["quota-meter"].main}`, shared.operatorToken);
    const { account, secret } = await admin.quickstart(`repair-${Date.now()}`, {});
    admin.close();
    const payer = x402Payer(devnet, "payer8");
    const payTo = await usdcBalance(chain, devnet, PAY_TO);
    const before = await repaired();
    // The link back, and the gateway's channel to quota-meter with it (a key is looked up first).
    await link.restore();
    await found("the gateway reaches quota-meter again", async () =>
      (await fetch(`${gateway}/api/account/usage`, { headers: { authorization: `Bearer ${secret}` } }))
        .status === 200
        ? true
        : undefined,
    );
    const { res, body } = await topUpWithTheCreditCallCut(payer, { authorization: `Bearer ${secret}` });
    expect(res.status, JSON.stringify(body)).toBe(202);
    expect(body.data).toMatchObject({ credit: "pending", account_id: account.id, balance_usdc: null });
    expect(await usdcBalance(chain, devnet, PAY_TO)).toBe(payTo + ONE);
    await found("the key's account is credited", async () =>
      (await creditsOf(account.id)) > 0n ? true : undefined,
    );
    expect(await creditsOf(account.id)).toBe(ONE);
    expect(await repaired()).toBe(before + 1);
    await until("the repair consumer acked every event", repairCaughtUp, 40_000, 250);
    expect(await creditsOf(account.id)).toBe(ONE);
  }, 90_000);
});
