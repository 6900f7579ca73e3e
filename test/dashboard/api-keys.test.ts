import { ACCOUNT_KEY_LIMITS } from "@tollgate/catalog";
import { contracts, createClient, grpc } from "@tollgate/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../quota-meter/helpers.ts";
import { GATEWAY_TOKEN } from "../support/mesh.ts";
import { DASHBOARD_TOKEN, startTestDashboard, type TestDashboard, Wallet } from "./support.ts";

// The dashboard's JSON API against a real quota-meter, Redis and PostgreSQL, for a signed-in wallet:
// sessions, keys (each wallet its own), usage, who may call AccountService, and nothing secret in a
// log line. Signing in and up are in api.test.ts.

let dash: TestDashboard;
// The dashboard's clock stands still at the file's start, as in api.test.ts (which moves its own).
const clock = Date.now();
const now = () => clock;

beforeAll(async () => {
  dash = await startTestDashboard({}, { now });
});

afterAll(async () => {
  await dash?.stop();
});

describe("sessions", () => {
  it("needs the session's CSRF token on every state-changing call and refuses other origins", async () => {
    const wallet = new Wallet(dash.url);
    await wallet.signIn();
    const token = wallet.csrf;
    wallet.csrf = "";
    const without = await wallet.call("POST", "/keys");
    expect(without.status).toBe(403);
    expect(without.body.error.code).toBe("csrf_refused");
    wallet.csrf = `${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`;
    expect((await wallet.call("POST", "/keys")).status).toBe(403);
    wallet.csrf = token;
    const foreign = await wallet.call("POST", "/keys", undefined, { origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    expect((await wallet.call("GET", "/keys")).body.data.keys).toEqual([]);
  });

  it("sign-out ends the session on the server: the old cookie no longer works", async () => {
    const wallet = new Wallet(dash.url);
    await wallet.signIn();
    const cookie = wallet.cookie;
    expect((await wallet.call("POST", "/sign-out")).status).toBe(200);
    wallet.cookie = cookie;
    const after = await wallet.call("GET", "/keys");
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe("not_signed_in");
  });
});

describe("keys", () => {
  it("a second wallet can neither see nor touch the first wallet's keys", async () => {
    const first = new Wallet(dash.url);
    const second = new Wallet(dash.url);
    await first.signIn();
    await second.signIn();
    const created = await first.call("POST", "/keys");
    expect(created.status).toBe(200);
    const { key, secret } = created.body.data;
    expect(secret).toMatch(/^tg_live_[A-Za-z0-9_-]{43}$/);
    expect(secret.startsWith(key.prefix)).toBe(true);

    expect((await second.call("GET", "/keys")).body.data.keys).toEqual([]);
    const revoke = await second.call("POST", `/keys/${key.id}/revoke`);
    expect(revoke.status).toBe(404);
    expect(revoke.body.error.code).toBe("not_found");
    expect((await second.call("POST", `/keys/${key.id}/replace`)).status).toBe(404);
    // The second wallet's session with the first wallet's CSRF token is still refused.
    const swapped = await second.call("POST", `/keys/${key.id}/revoke`, undefined, {
      "x-csrf-token": first.csrf,
    });
    expect(swapped.status).toBe(403);

    // Untouched: still live, and still authorized.
    expect((await first.call("GET", "/keys")).body.data.keys).toEqual([
      { ...key, revoked_at: null, last_used_at: null },
    ]);
    expect((await dash.meter.meter.authorize(secret)).decision).toBe("DECISION_ALLOW");
  });

  it("shows a key once: the list never carries it; replace makes a new key and revokes the old one", async () => {
    const wallet = new Wallet(dash.url);
    await wallet.signIn();
    const { key, secret } = (await wallet.call("POST", "/keys")).body.data;
    const listed = await wallet.call("GET", "/keys");
    expect(JSON.stringify(listed.body)).not.toContain(secret);

    const replaced = await wallet.call("POST", `/keys/${key.id}/replace`);
    expect(replaced.status).toBe(200);
    expect(replaced.body.data.revoked.id).toBe(key.id);
    expect(replaced.body.data.revoked.revoked_at).not.toBeNull();
    expect(replaced.body.data.key.id).not.toBe(key.id);
    expect((await dash.meter.meter.authorize(secret)).decision).toBe("DECISION_INVALID_KEY");
    expect((await dash.meter.meter.authorize(replaced.body.data.secret)).decision).toBe("DECISION_ALLOW");

    const twice = await wallet.call("POST", `/keys/${key.id}/replace`);
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe("key_revoked");
    const keys = (await wallet.call("GET", "/keys")).body.data.keys;
    expect(keys.map((k: { id: string }) => k.id).sort()).toEqual([key.id, replaced.body.data.key.id].sort());
  });

  it("bounds what a free account can make: 20 live keys, then 409 too_many_keys until one is revoked", async () => {
    expect(ACCOUNT_KEY_LIMITS.live).toBe(20);
    const wallet = new Wallet(dash.url);
    await wallet.signIn();
    const made: { id: string }[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await wallet.call("POST", "/keys");
      expect(res.status).toBe(200);
      made.push(res.body.data.key);
    }
    const over = await wallet.call("POST", "/keys");
    expect(over.status).toBe(409);
    expect(over.body.error.code).toBe("too_many_keys");
    expect(over.body.error.message).toContain("revoke one first");
    expect((await wallet.call("GET", "/keys")).body.data.keys).toHaveLength(20);
    expect((await wallet.call("POST", `/keys/${made[0]?.id}/revoke`)).status).toBe(200);
    expect((await wallet.call("POST", "/keys")).status).toBe(200);
  });

  it("revoke: the key is refused at once", async () => {
    const wallet = new Wallet(dash.url);
    await wallet.signIn();
    const { key, secret } = (await wallet.call("POST", "/keys")).body.data;
    const revoked = await wallet.call("POST", `/keys/${key.id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data.key.revoked_at).not.toBeNull();
    expect((await dash.meter.meter.authorize(secret)).decision).toBe("DECISION_INVALID_KEY");
  });
});

describe("usage", () => {
  it("today and this month are the numbers Authorize counts (the X-Quota-* values), per-day calls come from the rollups", async () => {
    const wallet = new Wallet(dash.url);
    await wallet.signIn();
    const { key, secret } = (await wallet.call("POST", "/keys")).body.data;
    let last = await dash.meter.meter.authorize(secret);
    for (let i = 0; i < 2; i++) last = await dash.meter.meter.authorize(secret);
    const usage = (await wallet.call("GET", "/usage")).body.data;
    expect(usage.today).toEqual({
      window: new Date().toISOString().slice(0, 10),
      used: last.quota?.dayUsed,
      limit: last.quota?.dayLimit,
    });
    expect(usage.month).toEqual({
      window: new Date().toISOString().slice(0, 7),
      used: last.quota?.monthUsed,
      limit: last.quota?.monthLimit,
    });
    expect(usage.account.status).toBe("active");
    expect(usage.days).toHaveLength(30);

    const today = new Date().toISOString().slice(0, 10);
    await dash.meter.meter.report([
      {
        requestId: "r1",
        accountId: last.accountId,
        keyId: key.id,
        endpoint: "/api/chain/block-number",
        network: "ethereum",
        status: 200,
        latencyMs: 1,
        time: new Date().toISOString(),
        refund: false,
        dayWindow: last.dayWindow,
        monthWindow: last.monthWindow,
      },
      {
        requestId: "r2",
        accountId: last.accountId,
        keyId: key.id,
        endpoint: "/api/chain/block-number",
        network: "ethereum",
        status: 502,
        latencyMs: 1,
        time: new Date().toISOString(),
        refund: true,
        dayWindow: last.dayWindow,
        monthWindow: last.monthWindow,
      },
    ]);
    const day = await waitFor(async () => {
      const d = (await wallet.call("GET", "/usage")).body.data.days.at(-1);
      return d.calls === 2 && d;
    });
    expect(day).toEqual({ day: today, calls: 2, errors: 1 });
  });

  it("shows an inactive subscription as quota-meter holds it", async () => {
    const wallet = new Wallet(dash.url);
    const { body } = await wallet.signIn();
    await dash.meter.admin.update(body.data.account.id, { status: "past_due" });
    expect((await wallet.call("GET", "/usage")).body.data.account.status).toBe("past_due");
  });
});

describe("who may call AccountService", () => {
  it("only the dashboard's mesh token: the gateway's is refused, and the dashboard's cannot meter", async () => {
    const addr = `127.0.0.1:${dash.meter.handle.grpcPort}`;
    const asGateway = createClient(contracts.quotaMeter().AccountService, addr, {
      service: "quota-meter",
      defaultDeadlineMs: 5_000,
      token: GATEWAY_TOKEN,
    });
    const asDashboard = createClient(contracts.quotaMeter().QuotaMeterService, addr, {
      service: "quota-meter",
      defaultDeadlineMs: 5_000,
      token: DASHBOARD_TOKEN,
    });
    try {
      await expect(
        asGateway.call("ResolveWalletAccount", { address: `0x${"1".repeat(40)}`, create: true }),
      ).rejects.toMatchObject({ failure: { grpcCode: grpc.status.PERMISSION_DENIED } });
      await expect(
        asDashboard.call("Authorize", {
          requestId: "x",
          apiKey: "tg_live_x",
          endpoint: "",
          network: "",
          leaseUnits: 1,
        }),
      ).rejects.toMatchObject({ failure: { grpcCode: grpc.status.PERMISSION_DENIED } });
    } finally {
      asGateway.close();
      asDashboard.close();
    }
  });
});

describe("logs", () => {
  it("no key, session id, CSRF token or signature appears in any log line of quota-meter or the dashboard", async () => {
    const wallet = new Wallet(dash.url);
    await wallet.signIn();
    const { key } = (await wallet.call("POST", "/keys")).body.data;
    await wallet.call("POST", `/keys/${key.id}/replace`);
    await wallet.call("GET", "/usage");
    await wallet.call("POST", "/sign-out");
    const lines = dash.logLines();
    expect(lines.some((l) => l.msg === "signed in")).toBe(true);
    expect(lines.some((l) => l.msg === "key created")).toBe(true);
    const text = lines.map((l) => JSON.stringify(l)).join("\n");
    expect(wallet.secrets.length).toBeGreaterThanOrEqual(5);
    for (const secret of wallet.secrets) expect(text).not.toContain(secret);
  });
});
