import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { type Hex, hexToString } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../quota-meter/helpers.ts";
import { devnet } from "../support/devnet.ts";
import { mesh } from "../support/gateway.ts";

// The dashboard in Debian's Chromium (headless, driven by playwright-core): a wallet provider
// injected into the page (EIP-1193) signs with a devnet account via viem; the test signs in,
// creates a key, calls the gateway with it, sees the usage move, revokes it and sees 401.
// Screenshots of each page go to test/artifacts/dashboard/.

const ARTIFACTS = fileURLToPath(new URL("../artifacts/dashboard/", import.meta.url));
const spare = devnet.accounts.find((a) => a.role === "spare5");
if (!spare) throw new Error("no devnet account spare5");
const wallet = privateKeyToAccount(spare.privateKey as Hex);

let context: BrowserContext;
let page: Page;
let profile: string;
const signRequests: string[] = [];

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
  // The wallet: requests from the page's window.ethereum are answered here, signing with viem.
  await page.exposeFunction("__tollgateWallet", async (method: string, params: unknown[]) => {
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return [wallet.address];
      case "eth_chainId":
        return "0x1";
      case "personal_sign": {
        const [data, address] = params as [Hex, string];
        if (address.toLowerCase() !== wallet.address.toLowerCase()) throw new Error("unknown account");
        signRequests.push(hexToString(data));
        return wallet.signMessage({ message: { raw: data } });
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

async function chainCall(key: string) {
  const res = await fetch(`${mesh.gatewayUrl}/api/chain/block-number?network=ethereum`, {
    headers: { authorization: `Bearer ${key}` },
  });
  await res.arrayBuffer();
  return res;
}

describe("the dashboard in a real browser", () => {
  let secret = "";
  let keyPrefix = "";

  it("signs in with the injected wallet: the message names the dashboard, and the keys page opens", async () => {
    await page.goto(mesh.dashboardUrl);
    await expect(page.getByRole("heading", { name: "Sign in with your wallet" }).isVisible()).resolves.toBe(
      true,
    );
    // The free plan a new account gets, as quota-meter enforces it, and how to get more.
    await page.locator("#free-plan", { hasText: "calls a day" }).waitFor();
    await expect(page.locator("#free-plan").textContent()).resolves.toBe(
      "1,000 calls a day, 10,000 a month, at most 5 a second",
    );
    await expect(page.getByText("Pay per call with x402 or MPP").isVisible()).resolves.toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, "sign-in.png"), fullPage: true });
    await page.getByRole("button", { name: "Sign in with wallet" }).click();
    await page.waitForURL(`${mesh.dashboardUrl}/keys`);
    expect(signRequests).toHaveLength(1);
    expect(signRequests[0]).toContain(
      `${new URL(mesh.dashboardUrl).host} wants you to sign in with your Ethereum account:`,
    );
    expect(signRequests[0]).toContain(wallet.address);
    expect(signRequests[0]).toContain(`URI: ${mesh.dashboardUrl}`);
    const cookies = await context.cookies(mesh.dashboardUrl);
    expect(cookies.find((c) => c.name === "tollgate_session")).toMatchObject({
      httpOnly: true,
      sameSite: "Strict",
    });
  });

  it("creates a key, shown once with a copy button and a warning; the list shows only its prefix", async () => {
    await page.getByRole("button", { name: "Create key" }).click();
    const input = page.getByLabel("New key");
    await input.waitFor();
    secret = await input.inputValue();
    expect(secret).toMatch(/^tg_live_[A-Za-z0-9_-]{43}$/);
    keyPrefix = secret.slice(0, 12);
    await expect(page.getByRole("alert").textContent()).resolves.toContain("It will not be shown again");
    await expect(page.getByRole("button", { name: "Copy" }).isVisible()).resolves.toBe(true);
    const row = page.locator("tbody#keys tr", { hasText: keyPrefix });
    await row.waitFor();
    await expect(row.textContent()).resolves.toContain("Active");
    await page.screenshot({ path: join(ARTIFACTS, "keys-created.png"), fullPage: true });
    // Once: a reload shows the prefix, never the key.
    await page.reload();
    await page.locator("tbody#keys tr", { hasText: keyPrefix }).waitFor();
    expect(await page.content()).not.toContain(secret);
  });

  it("the key works at the gateway, and the usage page shows the calls as the X-Quota headers count them", async () => {
    let used = "";
    for (let i = 0; i < 3; i++) {
      const res = await chainCall(secret);
      expect(res.status).toBe(200);
      used = res.headers.get("x-quota-day-used") ?? "";
    }
    expect(Number(used)).toBeGreaterThanOrEqual(3);
    await page.goto(`${mesh.dashboardUrl}/usage`);
    // The day window is exact at once; the per-day chart follows the usage stream.
    await waitFor(
      async () => {
        await page.reload();
        await page.locator("#today-figure").filter({ hasText: "calls" }).waitFor();
        const figure = (await page.locator("#today-figure").textContent()) ?? "";
        const todayRow = page.locator("#days tr").last();
        const calls = Number((await todayRow.locator("td").nth(1).textContent()) ?? "0");
        return figure.startsWith(`${used} of `) && calls >= 3;
      },
      15_000,
      250,
    );
    await expect(page.locator("#sub-status").textContent()).resolves.toBe("active");
    await expect(page.locator("#plan-name").textContent()).resolves.toBe("Free (self-serve sign-up)");
    await expect(page.locator("#plan-daily").textContent()).resolves.toBe("1,000 calls");
    await expect(page.locator("#plan-more").isVisible()).resolves.toBe(true);
    await expect(page.locator("#chart svg").count()).resolves.toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, "usage.png"), fullPage: true });
  });

  it("revokes the key from the keys page: the gateway answers 401", async () => {
    await page.goto(`${mesh.dashboardUrl}/keys`);
    const row = page.locator("tbody#keys tr", { hasText: keyPrefix });
    await row.getByRole("button", { name: `Revoke key ${keyPrefix}…` }).click();
    await page.locator("#keys-status", { hasText: "revoked" }).waitFor();
    // The list is drawn again before the status line says so.
    await expect(page.locator("tbody#keys tr", { hasText: keyPrefix }).textContent()).resolves.toContain(
      "Revoked",
    );
    await page.screenshot({ path: join(ARTIFACTS, "keys-revoked.png"), fullPage: true });
    // A lease the gateway held for the key ends within LEASE_TTL_MS (1 s).
    const refused = await waitFor(
      async () => {
        const res = await chainCall(secret);
        return res.status === 401 && res;
      },
      15_000,
      250,
    );
    expect(refused.status).toBe(401);
  });

  it("on a phone-sized screen the keys page keeps one column and every action in reach", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${mesh.dashboardUrl}/keys`);
    await page.locator("tbody#keys tr").first().waitFor();
    const overflow = await page.evaluate("document.documentElement.scrollWidth > window.innerWidth");
    expect(overflow).toBe(false);
    await page.screenshot({ path: join(ARTIFACTS, "keys-phone.png"), fullPage: true });
    await page.setViewportSize({ width: 1100, height: 900 });
  });

  it("sign-out ends the session: the keys page sends the browser back to sign-in", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${mesh.dashboardUrl}/`);
    await page.goto(`${mesh.dashboardUrl}/keys`);
    await page.waitForURL(`${mesh.dashboardUrl}/`);
  });
});
