import { randomUUID } from "node:crypto";
import { contracts, createClient } from "@tollgate/platform";
import { createSiweMessage } from "viem/siwe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GATEWAY_TOKEN } from "../support/mesh.ts";
import { startTestDashboard, type TestDashboard, Wallet } from "./support.ts";

// The dashboard's JSON API against a real quota-meter, Redis and PostgreSQL: wallets sign in
// (EIP-4361) and sign up, within their rate limits, on the plan quota-meter holds. Sessions, keys,
// usage and logs are in api-keys.test.ts.

let dash: TestDashboard;
let clock = Date.now();
const now = () => clock;

beforeAll(async () => {
  dash = await startTestDashboard({}, { now });
});

afterAll(async () => {
  await dash?.stop();
});

describe("sign-in with Ethereum", () => {
  it("creates an account on the free plan at the first sign-in and reaches the same one later", async () => {
    const wallet = new Wallet(dash.url);
    const first = await wallet.signIn();
    expect(first.status).toBe(200);
    expect(first.body.data.created).toBe(true);
    expect(first.body.data.account.address).toBe(wallet.account.address.toLowerCase());
    const cookie = first.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(
      /^tollgate_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/,
    );

    const again = await wallet.signIn();
    expect(again.status).toBe(200);
    expect(again.body.data.created).toBe(false);
    expect(again.body.data.account.id).toBe(first.body.data.account.id);

    // Issue 34: a wallet costs nothing to make, so its account gets the free plan's figures (the
    // defaults: 1,000 a day, 10,000 a month, burst 5), never the operator's 200,000 a day.
    const usage = await wallet.call("GET", "/usage");
    expect(usage.body.data.plan).toEqual({
      name: "free",
      daily_limit: 1_000,
      monthly_limit: 10_000,
      burst_per_second: 5,
    });
    // What a call with one of its keys carries (the X-Quota-* values the gateway sets).
    const { secret } = (await wallet.call("POST", "/keys")).body.data;
    const call = await dash.meter.meter.authorize(secret);
    expect(call.decision).toBe("DECISION_ALLOW");
    expect(call.quota).toMatchObject({ dayLimit: 1_000, monthLimit: 10_000 });
  });

  it("leaves the operator's accounts on the standard plan", async () => {
    const { accountId, apiKey } = await dash.meter.admin.accountWithKey();
    const { account } = await dash.meter.admin.get(accountId);
    expect(account).toMatchObject({ plan: "standard", dailyLimit: 200_000, monthlyLimit: 2_000_000 });
    expect((await dash.meter.meter.authorize(apiKey)).quota).toMatchObject({
      dayLimit: 200_000,
      monthLimit: 2_000_000,
    });
  });

  it("states the free plan before sign-in, as quota-meter holds it", async () => {
    const res = await new Wallet(dash.url).call("GET", "/plans");
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      free: { daily_limit: 1_000, monthly_limit: 10_000, burst_per_second: 5 },
      free_summary: "1,000 calls a day, 10,000 a month, at most 5 a second",
      sign_up_open: true,
      sign_ups_per_hour: 10_000,
    });
  });

  it("refuses a replayed message: its nonce was spent by the first sign-in", async () => {
    const wallet = new Wallet(dash.url);
    const signed = await wallet.signed();
    expect((await wallet.call("POST", "/sign-in", signed)).status).toBe(200);
    const replay = await new Wallet(dash.url).call("POST", "/sign-in", signed);
    expect(replay.status).toBe(401);
    expect(replay.body.error.code).toBe("siwe_refused");
    expect(replay.body.error.message).toContain("nonce");
    expect(replay.headers.get("set-cookie")).toBeNull();
  });

  it("refuses an expired message, and its nonce cannot be tried again", async () => {
    const wallet = new Wallet(dash.url);
    const signed = await wallet.signed();
    clock += 5 * 60_000 + 1;
    try {
      const late = await wallet.call("POST", "/sign-in", signed);
      expect(late.status).toBe(401);
      expect(late.body.error.code).toBe("siwe_refused");
      expect(late.body.error.message).toContain("expired");
    } finally {
      clock = Date.now();
    }
    expect((await wallet.call("POST", "/sign-in", signed)).body.error.message).toContain("nonce");
  });

  it("refuses a message it did not issue, a changed one and another address's signature", async () => {
    const wallet = new Wallet(dash.url);
    const host = new URL(dash.url).host;
    const forged = createSiweMessage({
      address: wallet.account.address,
      chainId: 1,
      domain: host,
      nonce: "abcdefgh12345678",
      uri: dash.url,
      version: "1",
      expirationTime: new Date(Date.now() + 60_000),
    });
    const unknown = await wallet.call("POST", "/sign-in", {
      message: forged,
      signature: await wallet.account.signMessage({ message: forged }),
    });
    expect(unknown.status).toBe(401);

    const { message } = await wallet.signed();
    const changed = message.replace(host, "evil.example");
    const tampered = await wallet.call("POST", "/sign-in", {
      message: changed,
      signature: await wallet.account.signMessage({ message: changed }),
    });
    expect(tampered.status).toBe(401);
    expect(tampered.body.error.code).toBe("siwe_refused");

    const other = new Wallet(dash.url);
    const { message: mine } = await wallet.signed();
    const stolen = await wallet.call("POST", "/sign-in", {
      message: mine,
      signature: await other.account.signMessage({ message: mine }),
    });
    expect(stolen.status).toBe(401);
    expect(stolen.body.error.message).toContain("signature");
  });

  it("names the bad parameter and never answers 500 for malformed input", async () => {
    const wallet = new Wallet(dash.url);
    const bad = await wallet.call("POST", "/nonce", { address: "0x123" });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "invalid_parameter", parameter: "address" });
    const notJson = await wallet.call("POST", "/sign-in", "{nope");
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.parameter).toBe("body");
    const noSig = await wallet.call("POST", "/sign-in", { message: "hello" });
    expect(noSig.body.error.parameter).toBe("signature");
    const garbage = await wallet.call("POST", "/sign-in", { message: "hello", signature: "0x00" });
    expect(garbage.status).toBe(401);
  });

  it("refuses a sign-in posted from another origin (login CSRF)", async () => {
    const wallet = new Wallet(dash.url);
    const signed = await wallet.signed();
    const res = await wallet.call("POST", "/sign-in", signed, { origin: "https://evil.example" });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("csrf_refused");
  });
});

describe("sign-in rate limit", () => {
  it("answers 429 rate_limited with Retry-After past the per-minute limit of one client address; others are not held back", async () => {
    const limited = await dash.another({
      noncesPerMinute: 3,
      trustProxy: 1,
      redisPrefix: `${dash.prefix}rl1:`,
    });
    const from = (ip: string) => ({ "x-forwarded-for": ip });
    const ask = (ip: string) =>
      new Wallet(limited.url).call(
        "POST",
        "/nonce",
        { address: new Wallet(limited.url).account.address },
        from(ip),
      );
    for (let i = 0; i < 3; i++) expect((await ask("203.0.113.7")).status).toBe(200);
    const refused = await ask("203.0.113.7");
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("rate_limited");
    expect(refused.body.error.message).toContain("at most 3");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    // Another client address, and another /64 of IPv6, have their own allowance...
    expect((await ask("203.0.113.8")).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await ask(`2001:db8:1:2::${i + 1}`)).status).toBe(200);
    // ...but the addresses of one /64 share one.
    expect((await ask("2001:db8:1:2:ffff::9")).status).toBe(429);
    expect((await ask("2001:db8:1:3::1")).status).toBe(200);
    await limited.stop();
  });

  it("does not believe X-Forwarded-For unless TRUST_PROXY says so: a spoofed header is the same client", async () => {
    const limited = await dash.another({
      noncesPerMinute: 2,
      trustProxy: 0,
      redisPrefix: `${dash.prefix}rl2:`,
    });
    const ask = (ip: string) =>
      new Wallet(limited.url).call(
        "POST",
        "/nonce",
        { address: new Wallet(limited.url).account.address },
        { "x-forwarded-for": ip },
      );
    expect((await ask("198.51.100.1")).status).toBe(200);
    expect((await ask("198.51.100.2")).status).toBe(200);
    expect((await ask("198.51.100.3")).status).toBe(429);
    await limited.stop();
  });
});

describe("the free plan's figures are quota-meter's", () => {
  it("an operator's FREE_* figures are what the page states and what a first sign-in gets", async () => {
    const other = await startTestDashboard(
      {},
      {},
      {
        freePlan: { dailyLimit: 300, monthlyLimit: 0, burstPerSecond: 0 },
      },
    );
    try {
      const plans = (await new Wallet(other.url).call("GET", "/plans")).body.data;
      // Burst 0 is the service default guard (BURST_PER_SECOND), stated as applied.
      const burst = other.meter.config.defaultBurstPerSecond;
      expect(plans.free).toEqual({ daily_limit: 300, monthly_limit: 0, burst_per_second: burst });
      expect(plans.free_summary).toBe(`300 calls a day, no monthly cap, at most ${burst} a second`);
      const wallet = new Wallet(other.url);
      expect((await wallet.signIn()).status).toBe(200);
      expect((await wallet.call("GET", "/usage")).body.data.plan).toEqual({
        name: "free",
        ...plans.free,
      });
    } finally {
      await other.stop();
    }
  });
});

describe("sign-up rate limit", () => {
  it("refuses the (N+1)th new wallet from one client address within the hour with 429 and Retry-After; returning wallets and other addresses still sign in", async () => {
    const limited = await dash.another({
      signUpsPerHour: 2,
      trustProxy: 1,
      redisPrefix: `${dash.prefix}su1:`,
    });
    try {
      const from = (ip: string, wallet = new Wallet(limited.url)) => {
        wallet.headers = { "x-forwarded-for": ip };
        return wallet;
      };
      const first = from("203.0.113.50");
      for (const wallet of [first, from("203.0.113.50")]) {
        const res = await wallet.signIn();
        expect(res.status).toBe(200);
        expect(res.body.data.created).toBe(true);
      }
      const third = from("203.0.113.50");
      const refused = await third.signIn();
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe("rate_limited");
      expect(refused.body.error.message).toContain("at most 2 new accounts an hour");
      const retryAfter = Number(refused.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThan(60);
      expect(retryAfter).toBeLessThanOrEqual(3_600);
      expect(refused.headers.get("set-cookie")).toBeNull();
      // A wallet that has an account is never held back, from the same address.
      const back = await from("203.0.113.50", new Wallet(limited.url, first.account)).signIn();
      expect(back.status).toBe(200);
      expect(back.body.data.created).toBe(false);
      // Another client address has its own allowance: the refused wallet signs up from there, and
      // its account is made then (created: the refusal made none).
      const elsewhere = await from("198.51.100.60", new Wallet(limited.url, third.account)).signIn();
      expect(elsewhere.status).toBe(200);
      expect(elsewhere.body.data.created).toBe(true);
    } finally {
      await limited.stop();
    }
  });

  it("a wallet whose account a credits top-up made signs in at any time, but joins the free plan only as a sign-up the allowance has room for (issue 40)", async () => {
    const limited = await dash.another({
      signUpsPerHour: 1,
      trustProxy: 1,
      redisPrefix: `${dash.prefix}su2:`,
    });
    // The gateway's CreditTopUp for a wallet without an account (a stand-in for a settled payment:
    // buying for real is credits-top-up-sign-up.test.ts, on the mesh).
    const credits = createClient(
      contracts.quotaMeter().CreditService,
      `127.0.0.1:${dash.meter.handle.grpcPort}`,
      {
        service: "quota-meter",
        token: GATEWAY_TOKEN,
        defaultDeadlineMs: 10_000,
      },
    );
    try {
      const from = (ip: string, wallet: Wallet) => {
        wallet.headers = { "x-forwarded-for": ip };
        return wallet;
      };
      const buyer = new Wallet(limited.url);
      const topUp = await credits.call("CreditTopUp", {
        apiKey: "",
        wallet: buyer.account.address,
        amount: 1_000_000,
        cause: `test-settlement:${randomUUID()}`,
        scheme: "exact",
        paymentNetwork: "eip155:84532",
        transaction: "",
      });
      expect(topUp).toMatchObject({ accountCreated: true, credited: true });
      // 203.0.113.70 spends its one sign-up of the hour on a new wallet.
      expect((await from("203.0.113.70", new Wallet(limited.url)).signIn()).body.data.created).toBe(true);
      // The buyer signs in from there: its account exists, so no refusal; no room for a sign-up,
      // so it stays credits only.
      const held = from("203.0.113.70", buyer);
      const signedIn = await held.signIn();
      expect(signedIn.status).toBe(200);
      expect(signedIn.headers.get("retry-after")).toBeNull();
      expect(signedIn.body.data).toMatchObject({ account: { id: topUp.accountId }, created: false });
      expect((await held.call("GET", "/credits")).body.data).toMatchObject({
        credits_only: true,
        balance_usdc: "1",
      });
      // From an address with room: this sign-in is its sign-up (counted), and the account joins the
      // free plan with its credits.
      const joined = from("198.51.100.70", new Wallet(limited.url, buyer.account));
      expect((await joined.signIn()).status).toBe(200);
      expect((await joined.call("GET", "/credits")).body.data).toMatchObject({
        credits_only: false,
        balance_usdc: "1",
      });
      expect((await joined.call("GET", "/usage")).body.data.plan.name).toBe("free");
      // That address's one sign-up of the hour is spent by it: a new wallet from there is refused.
      expect((await from("198.51.100.70", new Wallet(limited.url)).signIn()).status).toBe(429);
    } finally {
      credits.close();
      await limited.stop();
    }
  });
});

describe("sign-up switch", () => {
  it("closed: a new address is refused with 403 sign_up_closed, an existing account still signs in", async () => {
    const closed = await dash.another({ signUpOpen: false });
    try {
      const known = new Wallet(dash.url);
      await known.signIn();
      const newcomer = await new Wallet(closed.url).signIn();
      expect(newcomer.status).toBe(403);
      expect(newcomer.body.error.code).toBe("sign_up_closed");
      const again = new Wallet(closed.url, known.account);
      const res = await again.signIn();
      expect(res.status).toBe(200);
      expect(res.body.data.sign_up_open).toBe(false);
    } finally {
      await closed.stop();
    }
  });
});
