import { readFileSync } from "node:fs";
import { toFunctionSelector } from "viem";
import { describe, expect, inject, it } from "vitest";
import { createAccountWithKey, createKey, revokeKey, updateAccount } from "../support/accounts.ts";
import { eventually, sleep } from "../support/eventually.ts";
import { get, post } from "../support/gateway.ts";

const devnet = JSON.parse(readFileSync(inject("mesh").devnetFile, "utf8"));
const reverter = devnet.chains.ethereum.contracts.reverter as string;
const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
const QUOTA_HEADERS = ["x-quota-day-limit", "x-quota-day-used", "x-quota-month-limit", "x-quota-month-used"];

describe("API-key plan through the gateway (spec 5, 7, 8)", () => {
  it("carries the four X-Quota headers, used counting this request", async () => {
    const { apiKey } = await createAccountWithKey({ daily: 1000, monthly: 5000 });
    const first = await get("/api/chain/block-number", bearer(apiKey));
    expect(first.status).toBe(200);
    expect(first.headers["x-quota-day-limit"]).toBe("1000");
    expect(first.headers["x-quota-day-used"]).toBe("1");
    expect(first.headers["x-quota-month-limit"]).toBe("5000");
    expect(first.headers["x-quota-month-used"]).toBe("1");
    const second = await get("/api/chain/chain-id", bearer(apiKey));
    expect(second.headers["x-quota-day-used"]).toBe("2");
    expect(second.headers["x-quota-month-used"]).toBe("2");
  });

  it("uses the plan defaults of 200,000 a day and 2,000,000 a month", async () => {
    const { apiKey } = await createAccountWithKey();
    const res = await get("/api/chain/block-number", bearer(apiKey));
    expect(res.headers["x-quota-day-limit"]).toBe("200000");
    expect(res.headers["x-quota-month-limit"]).toBe("2000000");
  });

  it("leaves out the pair of an uncapped window", async () => {
    const dayOnly = await createAccountWithKey({ daily: 50, monthly: 0 });
    const a = await get("/api/chain/block-number", bearer(dayOnly.apiKey));
    expect(a.headers["x-quota-day-limit"]).toBe("50");
    expect(a.headers["x-quota-month-limit"]).toBeUndefined();
    expect(a.headers["x-quota-month-used"]).toBeUndefined();

    const uncapped = await createAccountWithKey({ daily: 0, monthly: 0 });
    const b = await get("/api/chain/block-number", bearer(uncapped.apiKey));
    expect(b.status).toBe(200);
    for (const h of QUOTA_HEADERS) expect(b.headers[h]).toBeUndefined();
  });

  it("answers daily_limit_exceeded in the flat shape, with quota headers and no Retry-After", async () => {
    const { apiKey } = await createAccountWithKey({ daily: 2, monthly: 100 });
    expect((await get("/api/chain/block-number", bearer(apiKey))).status).toBe(200);
    expect((await get("/api/chain/block-number", bearer(apiKey))).status).toBe(200);
    const res = await get("/api/chain/block-number", bearer(apiKey));
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({
      error: "daily_limit_exceeded",
      message: expect.stringContaining("00:00 UTC"),
    });
    expect(res.body.data).toBeUndefined();
    expect(res.headers["retry-after"]).toBeUndefined();
    expect(res.headers["x-quota-day-limit"]).toBe("2");
    expect(res.headers["x-quota-day-used"]).toBe("2");
    expect(res.headers["x-quota-month-used"]).toBe("2");
  });

  it("answers monthly_limit_exceeded when the month is spent, and prefers it when both are", async () => {
    const month = await createAccountWithKey({ daily: 10, monthly: 1 });
    await get("/api/chain/block-number", bearer(month.apiKey));
    const res = await get("/api/chain/block-number", bearer(month.apiKey));
    expect(res.status).toBe(429);
    expect(res.body.error).toBe("monthly_limit_exceeded");
    expect(res.headers["x-quota-month-limit"]).toBe("1");
    expect(res.headers["retry-after"]).toBeUndefined();

    const both = await createAccountWithKey({ daily: 1, monthly: 1 });
    await get("/api/chain/block-number", bearer(both.apiKey));
    expect((await get("/api/chain/block-number", bearer(both.apiKey))).body.error).toBe(
      "monthly_limit_exceeded",
    );
  });

  it("shares the volume across every key of the account", async () => {
    const { accountId, apiKey } = await createAccountWithKey({ daily: 3, monthly: 100 });
    const second = await createKey(accountId);
    expect((await get("/api/chain/block-number", bearer(apiKey))).status).toBe(200);
    expect((await get("/api/chain/block-number", bearer(second))).headers["x-quota-day-used"]).toBe("2");
    expect((await get("/api/chain/block-number", bearer(apiKey))).status).toBe(200);
    expect((await get("/api/chain/block-number", bearer(second))).body.error).toBe("daily_limit_exceeded");
  });

  it("trips the burst guard with rate_limited and Retry-After: 1", async () => {
    const { apiKey } = await createAccountWithKey({ burst: 2 });
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => get("/api/chain/chain-id", bearer(apiKey))),
    );
    const limited = answers.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(answers.filter((r) => r.status === 200).length).toBeGreaterThan(0);
    for (const r of limited) {
      expect(r.body).toMatchObject({ error: "rate_limited", message: expect.any(String) });
      expect(r.headers["retry-after"]).toBe("1");
    }
  });

  it("answers 403 for an inactive subscription, naming the remedies, and 401 for a revoked key", async () => {
    const { accountId, keyId, apiKey } = await createAccountWithKey();
    await updateAccount(accountId, { status: "past_due" });
    const inactive = await get("/api/chain/block-number", bearer(apiKey));
    expect(inactive.status).toBe(403);
    expect(inactive.body).toMatchObject({ data: null, error: { code: "subscription_inactive" } });
    expect(inactive.body.error.message).toMatch(/subscription/);
    expect(inactive.body.error.message).toMatch(/pay per call/);

    await updateAccount(accountId, { status: "active" });
    expect((await get("/api/chain/block-number", bearer(apiKey))).status).toBe(200);
    await revokeKey(accountId, keyId);
    const revoked = await get("/api/chain/block-number", bearer(apiKey));
    expect(revoked.status).toBe(401);
    expect(revoked.body.error.code).toBe("invalid_api_key");
  });

  it("counts a revert and a not-found like any answer from the node (the charging rule)", async () => {
    const { apiKey } = await createAccountWithKey({ daily: 100, monthly: 1000 });
    expect((await get("/api/chain/block-number", bearer(apiKey))).headers["x-quota-day-used"]).toBe("1");
    const reverted = await post(
      "/api/chain/call",
      { to: reverter, data: toFunctionSelector("alwaysReverts()") },
      bearer(apiKey),
    );
    expect(reverted.status).toBe(422);
    expect(reverted.headers["x-quota-day-used"]).toBe("2");
    const missing = await get("/api/chain/block/0xffffffff", bearer(apiKey));
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("block_not_found");
    // time-based: proves no refund comes for them: a refund would be reported in a batch after the
    // response (every 100 ms), and this window spans several.
    await sleep(400);
    const after = await get("/api/chain/block-number", bearer(apiKey));
    expect(after.headers["x-quota-day-used"]).toBe("4");
    expect(after.headers["x-quota-month-used"]).toBe("4");
  });

  it("refuses bad input before counting it", async () => {
    const { apiKey } = await createAccountWithKey({ daily: 100, monthly: 1000 });
    const bad = await get("/api/chain/erc20-balance?address=0x12&contract=0x34", bearer(apiKey));
    expect(bad.status).toBe(400);
    for (const h of QUOTA_HEADERS) expect(bad.headers[h]).toBeUndefined();
    expect((await get("/api/chain/block-number", bearer(apiKey))).headers["x-quota-day-used"]).toBe("1");
  });

  it("serves the key owner's daily usage, free and not counted", async () => {
    const { apiKey } = await createAccountWithKey({ daily: 100, monthly: 1000 });
    for (let i = 0; i < 3; i++) await get("/api/chain/block-number", bearer(apiKey));
    const today = await eventually(
      async () => {
        const usage = await get("/api/account/usage?days=1", bearer(apiKey));
        expect(usage.status).toBe(200);
        return usage.body.data.days.at(-1) as { requests: number } | undefined;
      },
      (day) => (day?.requests ?? 0) >= 3,
      30_000,
      100,
    );
    expect(today?.requests).toBe(3);
    // Reading usage did not count against the windows.
    expect((await get("/api/chain/block-number", bearer(apiKey))).headers["x-quota-day-used"]).toBe("4");
    expect((await get("/api/account/usage")).status).toBe(401);
  });
});
