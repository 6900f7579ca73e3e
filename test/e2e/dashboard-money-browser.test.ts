import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createAdminClient } from "@tollgate/cli/clients/quota-admin";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { Receipt } from "mppx";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import type { Hex } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../quota-meter/helpers.ts";
import { devnet } from "../support/devnet.ts";
import { mesh } from "../support/gateway.ts";
import { devnetAccount, mppChargePayer } from "../support/mppx.ts";
import { sendUsdc, settlementClient, usdcBalance, x402Payer, x402PayerOfKey } from "../support/x402.ts";

// The credits and payments pages in Debian's Chromium (headless, playwright-core), with a wallet
// provider injected into the page (EIP-1193) that signs with viem: a devnet payer pays calls with
// the official x402 and mppx clients and finds them on the payments page; a wallet of its own buys
// credits (1 and 5 USDC, with @x402/fetch), spends some with an API key, sees both on the credits
// page and tops up 1 USDC more from the page. Screenshots go to
// test/artifacts/dashboard/.

const ARTIFACTS = fileURLToPath(new URL("../artifacts/dashboard/", import.meta.url));
/** The payer of the payments page: funded on the settlement chain and on Tempo. */
const payer = devnetAccount(devnet, "payer6");
/** The credits page's wallet: one of its own, so its balance and days are this test's alone. */
const ownKey = generatePrivateKey();
const own = privateKeyToAccount(ownKey);

let context: BrowserContext;
let page: Page;
let profile: string;
let wallet: PrivateKeyAccount = payer;
const typedDataChains: number[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  profile = mkdtempSync(join(tmpdir(), "tollgate-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1100, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  page = context.pages()[0] ?? (await context.newPage());
  let chainId = 1;
  // The wallet: requests from the page's window.ethereum are answered here, signing with viem.
  await page.exposeFunction("__tollgateWallet", async (method: string, params: unknown[]) => {
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return [wallet.address];
      case "eth_chainId":
        return `0x${chainId.toString(16)}`;
      case "wallet_switchEthereumChain":
        chainId = Number.parseInt((params[0] as { chainId: string }).chainId, 16);
        return null;
      case "personal_sign": {
        const [data, address] = params as [Hex, string];
        if (address.toLowerCase() !== wallet.address.toLowerCase()) throw new Error("unknown account");
        return wallet.signMessage({ message: { raw: data } });
      }
      case "eth_signTypedData_v4": {
        const [address, json] = params as [string, string];
        if (address.toLowerCase() !== wallet.address.toLowerCase()) throw new Error("unknown account");
        const { domain, types, primaryType, message } = JSON.parse(json);
        // A wallet signs typed data for its active chain only.
        if (Number(domain.chainId) !== chainId) throw new Error(`the wallet is on chain ${chainId}`);
        typedDataChains.push(chainId);
        const { EIP712Domain: _, ...rest } = types;
        return wallet.signTypedData({ domain, types: rest, primaryType, message });
      }
      default:
        throw new Error(`unsupported method ${method}`);
    }
  });
  await page.addInitScript(() => {
    const call = (
      globalThis as unknown as { __tollgateWallet: (m: string, p: unknown[]) => Promise<unknown> }
    ).__tollgateWallet;
    (globalThis as unknown as { ethereum: unknown }).ethereum = {
      isTollgateTestWallet: true,
      request: ({ method, params }: { method: string; params?: unknown[] }) => call(method, params ?? []),
      on() {},
      removeListener() {},
    };
  });
  page.on("dialog", (dialog) => void dialog.accept());
});

afterAll(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** Signs in with the page's wallet as `who` (after signing out whoever was signed in). */
async function signInAs(who: PrivateKeyAccount) {
  await context.clearCookies();
  wallet = who;
  await page.goto(mesh.dashboardUrl);
  await page.getByRole("button", { name: "Sign in with wallet" }).click();
  await page.waitForURL(`${mesh.dashboardUrl}/keys`);
}

/** The page's own JSON API, with the session's CSRF token (as its scripts call it). */
// biome-ignore lint/suspicious/noExplicitAny: JSON answers are walked by key in assertions
function pageApi(method: "GET" | "POST", path: string): Promise<any> {
  return page.evaluate(
    async ({ method, path }) => {
      const session = (await (await fetch("/api/dashboard/session")).json()) as {
        data: { csrf_token: string };
      };
      const res = await fetch(`/api/dashboard${path}`, {
        method,
        headers: { "x-csrf-token": session.data.csrf_token },
      });
      return ((await res.json()) as { data: unknown }).data;
    },
    { method, path },
  );
}

async function noOverflowOnAPhone(name: string) {
  await page.setViewportSize({ width: 390, height: 844 });
  const overflow = await page.evaluate("document.documentElement.scrollWidth > window.innerWidth");
  expect(overflow).toBe(false);
  await page.screenshot({ path: join(ARTIFACTS, `${name}-phone.png`), fullPage: true });
  await page.setViewportSize({ width: 1100, height: 900 });
}

describe("the money pages in a real browser", () => {
  it("the payments page lists the wallet's x402 and MPP payments, each chain by name; devnet chains have no explorer link", async () => {
    const path = "/api/chain/chain-id";
    const viaX402 = await x402Payer(devnet, "payer6").fetch(`${mesh.gatewayUrl}${path}?network=ethereum`);
    expect(viaX402.status).toBe(200);
    const x402Tx = decodePaymentResponseHeader(viaX402.headers.get("payment-response") ?? "").transaction;
    const viaMpp = await mppChargePayer(devnet, "payer6", devnet.demo.tempo.pathUsd.address).fetch(
      `${mesh.gatewayUrl}${path}?network=sepolia`,
    );
    expect(viaMpp.status).toBe(200);
    const mppTx = Receipt.fromResponse(viaMpp).reference;

    await signInAs(payer);
    await page.goto(`${mesh.dashboardUrl}/payments`);
    // The ledger records a payment from the settlement stream, within a second or two.
    const rowOf = (tx: string) => page.locator("tbody#payments tr", { has: page.locator(`[title="${tx}"]`) });
    await waitFor(
      async () => {
        await page.reload();
        await page.locator("#payments-status").waitFor({ state: "attached" });
        return (await rowOf(x402Tx).count()) === 1 && (await rowOf(mppTx).count()) === 1;
      },
      20_000,
      500,
    );
    const cells = async (tx: string) => rowOf(tx).locator("td").allTextContents();
    const [, x402Call, x402Way, x402Amount, x402Chain] = await cells(x402Tx);
    expect([x402Call, x402Way, x402Amount, x402Chain]).toEqual([
      `${path} (ethereum)`,
      "x402 exact",
      "0.001",
      "Base Sepolia (local)",
    ]);
    const [, mppCall, mppWay, mppAmount, mppChain] = await cells(mppTx);
    expect([mppCall, mppWay, mppAmount, mppChain]).toEqual([
      `${path} (sepolia)`,
      "MPP charge",
      "0.001",
      "Tempo Mainnet (local)",
    ]);
    // The devnets borrow public chain ids: a link would open a public explorer that never saw them.
    await expect(rowOf(x402Tx).locator("a").count()).resolves.toBe(0);
    await page.screenshot({ path: join(ARTIFACTS, "payments.png"), fullPage: true });
    await noOverflowOnAPhone("payments");
  });

  it("the credits page shows the balance, today's top-ups and draws, and the top-up buttons", async () => {
    await signInAs(own);
    const session = await pageApi("GET", "/session");
    // The wallet buys 1 and 5 USDC of credits with the official @x402/fetch client, no key: both
    // land on the account its sign-in made. Then a credits-only plan, so calls draw.
    await sendUsdc(devnet, "payer8", own.address, 6_000_000n);
    const buyer = x402PayerOfKey(devnet, ownKey);
    for (const [amount, balance] of [
      ["1", "1"],
      ["5", "6"],
    ]) {
      const res = await buyer.fetch(`${mesh.gatewayUrl}/api/credits?amount=${amount}`, { method: "POST" });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { data: unknown }).data).toMatchObject({
        credit: "credited",
        account_id: session.account.id,
        credited_usdc: amount,
        balance_usdc: balance,
        account_created: false,
      });
    }
    const admin = createAdminClient(mesh.quotaMeterAddr, mesh.operatorToken);
    try {
      await admin.updateAccount({ accountId: session.account.id, creditsOnly: true });
    } finally {
      admin.close();
    }
    const key = (await pageApi("POST", "/keys")).secret as string;
    let remaining = "";
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${mesh.gatewayUrl}/api/chain/block-number?network=ethereum`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { meta: { cost_usdc: string } };
      expect(body.meta.cost_usdc).toBe("0.001");
      remaining = res.headers.get("x-credits-remaining") ?? "";
    }
    expect(remaining).toBe("5.997");

    await page.goto(`${mesh.dashboardUrl}/credits`);
    const today = new Date().toISOString().slice(0, 10);
    // The balance is exact at once; the day's draws follow the usage stream into the ledger's days.
    await waitFor(
      async () => {
        await page.reload();
        await page.locator("#balance").filter({ hasText: "USDC" }).waitFor();
        const row = page.locator("#credit-days tr").last();
        const drawn = (await row.locator("td").nth(2).textContent()) ?? "";
        return drawn === "0.003";
      },
      20_000,
      500,
    );
    await expect(page.locator("#balance").textContent()).resolves.toBe("5.997 USDC");
    await expect(page.locator("#credits-mode").textContent()).resolves.toContain("credits-only");
    await expect(page.locator("#credit-days tr").last().locator("td").allTextContents()).resolves.toEqual([
      today,
      "6",
      "0.003",
      "0",
    ]);
    await expect(page.locator("#credits-chart svg").count()).resolves.toBe(1);
    for (const amount of ["1", "5", "20"]) {
      await expect(page.getByRole("button", { name: `Top up ${amount} USDC` }).isVisible()).resolves.toBe(
        true,
      );
    }
    await page.screenshot({ path: join(ARTIFACTS, "credits.png"), fullPage: true });
    await noOverflowOnAPhone("credits");
  });

  it("tops up 1 USDC from the signed-in wallet in the browser with x402: the balance and the receiver each gain exactly 1 USDC", async () => {
    // The credits page's wallet spent all it held on its top-ups so far; payer8 sends it exactly 1 USDC.
    const settlement = settlementClient(devnet);
    expect(await usdcBalance(settlement, devnet, own.address)).toBe(0n);
    await sendUsdc(devnet, "payer8", own.address, 1_000_000n);
    const payTo = devnet.demo.settlement.payTo;
    const receivedBefore = await usdcBalance(settlement, devnet, payTo);

    await page.goto(`${mesh.dashboardUrl}/credits`);
    await page.locator("#balance").filter({ hasText: "5.997 USDC" }).waitFor();
    await page.getByRole("button", { name: "Top up 1 USDC" }).click();
    // Done when the status line says how it ended (a failure names its cause).
    await page.locator("#top-up-status", { hasText: /Credited|failed/ }).waitFor({ timeout: 30_000 });
    await expect(page.locator("#top-up-status").textContent()).resolves.toMatch(
      /^Credited 1 USDC; the balance is 6\.997 USDC\. Transaction 0x[0-9a-f]{64}\.$/,
    );
    await page.locator("#balance").filter({ hasText: "6.997 USDC" }).waitFor();
    await expect(page.locator("#credit-days tr").last().locator("td").nth(1).textContent()).resolves.toBe(
      "7",
    );
    // The wallet signed once, on the settlement chain the offer named; the money moved exactly.
    expect(typedDataChains).toEqual([devnet.demo.settlement.chainId]);
    expect(await usdcBalance(settlement, devnet, own.address)).toBe(0n);
    expect(await usdcBalance(settlement, devnet, payTo)).toBe(receivedBefore + 1_000_000n);
    await page.screenshot({ path: join(ARTIFACTS, "credits-topped-up.png"), fullPage: true });
  });
});
