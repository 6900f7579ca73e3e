// x402 sign-in-with-x through the gateway of the shared mesh, with the official client helpers of
// @x402/extensions/sign-in-with-x signing as viem accounts: the 402 advertises the extension bound
// to this deployment's origin; a wallet with an account (its first dashboard sign-in made one) is
// served on that account's plan with no key and no payment, a credits-only one from the credits it
// bought with @x402/fetch (X-Credits-Remaining, meta.cost_usdc; 402 insufficient_credits once
// spent); a proof is served once (its replay is 401), and one made for another domain, one expired
// or one malformed is 401 naming the problem; a wallet without an account is 402 with the offers to
// pay instead, which the official @x402/fetch client then pays; hostile headers never get a 5xx.

import { decodePaymentRequiredHeader } from "@x402/core/http";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import {
  type CompleteSIWxInfo,
  createSIWxClientExtension,
  createSIWxPayload,
  encodeSIWxHeader,
  SIGN_IN_WITH_X,
  type SIWxExtension,
  wrapFetchWithSIWx,
} from "@x402/extensions/sign-in-with-x";
import { type Network, wrapFetchWithPayment, x402Client } from "@x402/fetch";
import fc from "fast-check";
import type { Hex } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { Wallet } from "../dashboard/support.ts";
import { createKey, updateAccount } from "../support/accounts.ts";
import { creditBalance, ledgerBalance as ledgerBalanceIn } from "../support/credits.ts";
import { devnet } from "../support/devnet.ts";
import { eventually } from "../support/eventually.ts";
import { get, mesh } from "../support/gateway.ts";
import { SUITE_BURST } from "../support/quota.ts";
import { sendUsdc, settlementClient, usdcBalance, x402PayerOfKey } from "../support/x402.ts";

const PATH = "/api/chain/chain-id?network=ethereum";
const URL_HERE = `${mesh.gatewayUrl}${PATH}`;
const HEADER = "SIGN-IN-WITH-X";

/** The sign-in-with-x extension of the gateway's 402 for PATH. */
async function challenge(): Promise<SIWxExtension> {
  const res = await get(PATH);
  expect(res.status).toBe(402);
  const required = decodePaymentRequiredHeader(res.headers["payment-required"] as string);
  const ext = required.extensions?.[SIGN_IN_WITH_X] as SIWxExtension | undefined;
  if (!ext) throw new Error("the 402 carries no sign-in-with-x extension");
  return ext;
}

/** A proof the official helpers sign from `ext` (its info changed by `patch`), as sent for `url`. */
async function proof(
  account: PrivateKeyAccount,
  ext: SIWxExtension,
  patch: Partial<CompleteSIWxInfo> = {},
  url = URL_HERE,
): Promise<string> {
  const chain = ext.supportedChains[0];
  if (!chain) throw new Error("no supported chain");
  const info: CompleteSIWxInfo = { ...ext.info, chainId: chain.chainId, type: chain.type, ...patch };
  return encodeSIWxHeader(await createSIWxPayload(info, account, url));
}

/** A fetch that records the SIGN-IN-WITH-X header of every request it sends. */
function recording() {
  const sent: string[] = [];
  const fetcher = async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    const header = request.headers.get(HEADER);
    if (header) sent.push(header);
    return fetch(request);
  };
  return { sent, fetcher };
}

/** A wallet whose first dashboard sign-in gave it an account on the free plan. */
async function walletWithAccount(): Promise<PrivateKeyAccount> {
  const wallet = new Wallet(mesh.dashboardUrl);
  const signIn = await wallet.signIn();
  expect(signIn.status).toBe(200);
  expect(signIn.body.data.created).toBe(true);
  return wallet.account;
}

const chain = settlementClient(devnet);

/** The key of a fresh wallet holding `usdcAtomic` of the settlement token, sent by the devnet's payer8. */
async function fundedWallet(usdcAtomic: bigint): Promise<Hex> {
  const key = generatePrivateKey();
  await sendUsdc(devnet, "payer8", privateKeyToAccount(key).address, usdcAtomic);
  return key;
}

/** An account's credit balance as the ledger in PostgreSQL holds it. */
const ledgerBalance = (accountId: string) => ledgerBalanceIn(mesh.databaseUrl, accountId);

describe("sign-in-with-x through the gateway", () => {
  it("the 402 advertises it, bound to this deployment's origin, with a fresh nonce on the settlement chain", async () => {
    const a = await challenge();
    const b = await challenge();
    expect(a.info.domain).toBe(new URL(mesh.gatewayUrl).host);
    expect(a.info.uri).toBe(URL_HERE);
    expect(a.info.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(b.info.nonce).not.toBe(a.info.nonce);
    expect(Date.parse(a.info.expirationTime ?? "") - Date.parse(a.info.issuedAt)).toBeGreaterThanOrEqual(
      300_000,
    );
    expect(a.supportedChains).toEqual([{ chainId: devnet.demo.settlement.network, type: "eip191" }]);
    // A credits top-up's 402 offers no sign-in: signing in buys nothing.
    const topUp = await fetch(`${mesh.gatewayUrl}/api/credits?amount=1`, { method: "POST" });
    expect(topUp.status).toBe(402);
    const offers = decodePaymentRequiredHeader(topUp.headers.get("payment-required") ?? "");
    expect(offers.accepts.length).toBeGreaterThan(0);
    expect(offers.extensions?.[SIGN_IN_WITH_X]).toBeUndefined();
  });

  it("serves a wallet with an account on its plan, without a key or a payment; the same proof again is 401", async () => {
    const account = await walletWithAccount();
    const { sent, fetcher } = recording();
    const signedIn = wrapFetchWithSIWx(fetcher, account);
    const first = await signedIn(URL_HERE);
    expect(first.status).toBe(200);
    expect(((await first.json()) as { data: unknown }).data).toMatchObject({ chain_id: expect.any(String) });
    expect(first.headers.get("x-quota-day-limit")).toBe("1000");
    expect(first.headers.get("x-quota-day-used")).toBe("1");
    expect(first.headers.get("payment-response")).toBeNull();
    // Each call signs a fresh proof; the day's count follows.
    const second = await signedIn(URL_HERE);
    expect(second.status).toBe(200);
    expect(second.headers.get("x-quota-day-used")).toBe("2");
    expect(sent).toHaveLength(2);
    expect(new Set(sent).size).toBe(2);

    const replay = await get(PATH, { [HEADER]: sent[0] as string });
    expect(replay.status).toBe(401);
    expect(replay.body.error).toMatchObject({ code: "sign_in_invalid", reason_code: "invalid_siwx_nonce" });
    expect(replay.body.error.message).toMatch(/used already/);
  });

  it("refuses another domain's proof, however well signed, and uses up nothing of the wallet's", async () => {
    const account = await walletWithAccount();
    const ext = await challenge();
    const elsewhere = `https://api.other.example${PATH}`;
    const foreign = await proof(
      account,
      ext,
      { domain: "api.other.example", uri: elsewhere, resources: [elsewhere] },
      elsewhere,
    );
    const res = await get(PATH, { [HEADER]: foreign });
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({
      code: "sign_in_invalid",
      reason_code: "invalid_siwx_domain_mismatch",
    });
    expect(res.body.error.message).toContain(new URL(mesh.gatewayUrl).host);
    // The same nonce, signed for this domain, still serves.
    const genuine = await get(PATH, { [HEADER]: await proof(account, ext) });
    expect(genuine.status).toBe(200);
  });

  it("refuses an expired proof and one issued too long ago", async () => {
    const account = await walletWithAccount();
    const ext = await challenge();
    const now = Date.now();
    const expired = await proof(account, ext, {
      issuedAt: new Date(now - 120_000).toISOString(),
      expirationTime: new Date(now - 60_000).toISOString(),
    });
    const res = await get(PATH, { [HEADER]: expired });
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({ code: "sign_in_invalid", reason_code: "invalid_siwx_expired" });
    const old = await proof(account, ext, {
      issuedAt: new Date(now - 10 * 60_000).toISOString(),
      expirationTime: new Date(now + 60_000).toISOString(),
    });
    const tooOld = await get(PATH, { [HEADER]: old });
    expect(tooOld.status).toBe(401);
    expect(tooOld.body.error.reason_code).toBe("invalid_siwx_issued_at_too_old");
  });

  it("refuses a malformed header naming the problem", async () => {
    const cases: [string, RegExp][] = [
      ["not base64 at all!", /base64/],
      [Buffer.from('{"domain":').toString("base64"), /JSON/],
      [Buffer.from(JSON.stringify({ domain: "x" })).toString("base64"), /address/],
    ];
    for (const [header, problem] of cases) {
      const res = await get(PATH, { [HEADER]: header });
      expect(res.status, header).toBe(401);
      expect(res.body.error.code).toBe("sign_in_invalid");
      expect(res.body.error.message).toMatch(problem);
    }
  });

  it("draws a credits-only account's credits, shows the balance left, and answers 402 insufficient_credits when they run out", async () => {
    // A wallet of its own buys 1 USDC of credits with the official @x402/fetch client, no key: the
    // top-up makes the wallet's account, credits only (buying credits gives no plan volume).
    const key = await fundedWallet(1_000_000n);
    const account = privateKeyToAccount(key);
    const bought = await x402PayerOfKey(devnet, key).fetch(`${mesh.gatewayUrl}/api/credits?amount=1`, {
      method: "POST",
    });
    expect(bought.status).toBe(200);
    const topUp = ((await bought.json()) as { data: { account_id: string } }).data;
    expect(topUp).toMatchObject({ credit: "credited", balance_usdc: "1", account_created: true });
    expect(await usdcBalance(chain, devnet, account.address)).toBe(0n);
    const accountId = topUp.account_id;
    await updateAccount(accountId, { burst: SUITE_BURST });
    const at = { stateDir: mesh.stateDir, quotaMeterAddr: mesh.quotaMeterAddr };

    // A key of the same account spends all but two calls' worth (998 calls at 0.001).
    const apiKey = await createKey(accountId);
    const spend = async (calls: number) => {
      for (let i = 0; i < calls; i++) {
        const res = await fetch(URL_HERE, { headers: { authorization: `Bearer ${apiKey}` } });
        await res.arrayBuffer();
        expect(res.status).toBe(200);
      }
    };
    await Promise.all([spend(250), spend(250), spend(249), spend(249)]);
    expect(await eventually(() => creditBalance(at, accountId), 2_000)).toBe(2_000);

    const ext = () => challenge();

    const first = await get(PATH, { [HEADER]: await proof(account, await ext()) });
    expect(first.status).toBe(200);
    expect(first.headers["x-credits-remaining"]).toBe("0.001");
    expect(first.body.meta.cost_usdc).toBe("0.001");
    expect(first.headers["payment-response"]).toBeUndefined();
    const second = await get(PATH, { [HEADER]: await proof(account, await ext()) });
    expect(second.status).toBe(200);
    expect(second.headers["x-credits-remaining"]).toBe("0");

    const spent = await get(PATH, { [HEADER]: await proof(account, await ext()) });
    expect(spent.status).toBe(402);
    expect(spent.body.error.code).toBe("insufficient_credits");
    expect(spent.body.error.message).toMatch(/POST \/api\/credits/);
    expect(
      decodePaymentRequiredHeader(spent.headers["payment-required"] as string).accepts.length,
    ).toBeGreaterThan(0);
    // The dashboard's balance: exact once the gateway reported the calls' draws.
    expect(await eventually(() => creditBalance(at, accountId), 0)).toBe(0);
    // The record agrees: the ledger in PostgreSQL holds the top-up and all 1,000 draws, once the
    // usage events of the calls (the signed-in ones carry no key) are folded.
    expect(await eventually(() => ledgerBalance(accountId), 0)).toBe(0);
  });

  it("answers a wallet without an account 402 no_account, with the offers to pay per call instead", async () => {
    const stranger = privateKeyToAccount(generatePrivateKey());
    const res = await get(PATH, { [HEADER]: await proof(stranger, await challenge()) });
    expect(res.status).toBe(402);
    expect(res.body.error.code).toBe("no_account");
    expect(res.body.error.message).toMatch(/POST \/api\/credits/);
    expect(res.body.error.message).toContain(stranger.address.toLowerCase());
    const offers = decodePaymentRequiredHeader(res.headers["payment-required"] as string);
    expect(offers.accepts.length).toBeGreaterThan(0);
  });

  it("an agent with the official @x402/fetch client, sign-in-with-x registered, pays until its wallet has an account, then signs in", async () => {
    const wallet = privateKeyToAccount(await fundedWallet(100_000n));
    const network = devnet.demo.settlement.network as Network;
    const client = new x402Client()
      .setSpendControls({ allowedAssets: [{ network, asset: devnet.demo.settlement.usdc.address }] })
      .register(network, new ExactEvmScheme(wallet))
      .registerExtension(createSIWxClientExtension({ signers: [wallet] }));
    const sent: string[] = [];
    const agent = wrapFetchWithPayment(async (input: string | URL | Request, init?: RequestInit) => {
      const request = new Request(input, init);
      sent.push(
        request.headers.has(HEADER)
          ? "sign-in"
          : request.headers.has("payment-signature")
            ? "payment"
            : "none",
      );
      return fetch(request);
    }, client);
    const usdc = () => usdcBalance(chain, devnet, wallet.address);

    // No account yet: the sign-in is refused with a 402 (no_account), and the client pays.
    const paid = await agent(URL_HERE);
    expect(paid.status).toBe(200);
    expect(paid.headers.get("payment-response")).not.toBeNull();
    expect(sent).toEqual(["none", "sign-in", "payment"]);
    const afterPaying = await usdc();
    expect(afterPaying).toBe(99_000n);

    // Its first dashboard sign-in makes an account: the next call is served on it, nothing paid.
    const dashboard = new Wallet(mesh.dashboardUrl, wallet);
    expect((await dashboard.signIn()).status).toBe(200);
    sent.length = 0;
    const signedIn = await agent(URL_HERE);
    expect(signedIn.status).toBe(200);
    expect(signedIn.headers.get("payment-response")).toBeNull();
    expect(signedIn.headers.get("x-quota-day-used")).toBe("1");
    expect(sent).toEqual(["none", "sign-in"]);
    expect(await usdc()).toBe(afterPaying);
  });

  it("never answers hostile SIGN-IN-WITH-X headers with a 5xx", async () => {
    const account = await walletWithAccount();
    const genuine = JSON.parse(
      Buffer.from(await proof(account, await challenge()), "base64").toString("utf8"),
    );
    const printable = fc.string({
      unit: fc.constantFrom(
        ..." !#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~",
      ),
    });
    const mutated = fc
      .record({
        field: fc.constantFrom(...Object.keys(genuine)),
        value: fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.array(fc.string()), fc.object()),
      })
      .map(({ field, value }) =>
        Buffer.from(JSON.stringify({ ...genuine, [field]: value })).toString("base64"),
      );
    const anyJson = fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v)).toString("base64"));
    const statuses = new Set<number>();
    await fc.assert(
      fc.asyncProperty(fc.oneof(printable, mutated, anyJson), async (header) => {
        const res = await get(PATH, { [HEADER]: header });
        statuses.add(res.status);
        // 429: the client's attempt limit (shared with payments), reached by this flood.
        expect([401, 429]).toContain(res.status);
      }),
      { numRuns: 60 },
    );
    expect(statuses.has(401)).toBe(true);
  });
});
