// Issue 34, finding 2: every new wallet got 200,000 free calls a day. Through the shared mesh, as a
// user sees it: a wallet's first dashboard sign-in gets the free plan (its key's X-Quota-* headers
// say 1,000 a day and 10,000 a month, the usage API burst 5), the operator's accounts keep the
// standard plan, and /api/pricing, /openapi.json and /llms.txt state the free plan with the figures
// quota-meter enforces (DescribePlans), not figures of their own.
import { describe, expect, it } from "vitest";
import { Wallet } from "../dashboard/support.ts";
import { createAccountWithKey } from "../support/accounts.ts";
import { get, mesh } from "../support/gateway.ts";

const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

describe("the free plan of self-serve accounts", () => {
  it("a first sign-in's key is metered on the free plan; an operator's key on the standard plan", async () => {
    const wallet = new Wallet(mesh.dashboardUrl);
    const signIn = await wallet.signIn();
    expect(signIn.status).toBe(200);
    expect(signIn.body.data.created).toBe(true);
    const { secret } = (await wallet.call("POST", "/keys")).body.data;
    const free = await get("/api/chain/chain-id", bearer(secret));
    expect(free.status).toBe(200);
    expect(free.headers["x-quota-day-limit"]).toBe("1000");
    expect(free.headers["x-quota-month-limit"]).toBe("10000");
    const usage = (await wallet.call("GET", "/usage")).body.data;
    expect(usage.plan).toEqual({
      name: "free",
      daily_limit: 1_000,
      monthly_limit: 10_000,
      burst_per_second: 5,
    });

    const { apiKey } = await createAccountWithKey();
    const standard = await get("/api/chain/chain-id", bearer(apiKey));
    expect(standard.status).toBe(200);
    expect(standard.headers["x-quota-day-limit"]).toBe("200000");
    expect(standard.headers["x-quota-month-limit"]).toBe("2000000");
  });

  it("/api/pricing, /openapi.json and /llms.txt state the free plan with the figures the dashboard shows", async () => {
    const page = (await new Wallet(mesh.dashboardUrl).call("GET", "/plans")).body.data;
    const pricing = (await get("/api/pricing")).body.data;
    expect(pricing.free_plan).toMatchObject({
      daily_quota: page.free.daily_limit,
      monthly_quota: page.free.monthly_limit,
      burst_per_second: page.free.burst_per_second,
    });
    expect(pricing.free_plan).toMatchObject({
      daily_quota: 1_000,
      monthly_quota: 10_000,
      burst_per_second: 5,
    });
    expect(pricing.free_plan.get).toContain(mesh.dashboardUrl);
    expect(pricing.free_plan.more).toMatch(/^For more: pay per call with x402 .*ask the operator/);
    expect(pricing.api_key_plan).toMatchObject({ daily_quota: 200_000, monthly_quota: 2_000_000 });

    const sentence = `Free plan (the account a first sign-in on the dashboard creates): ${page.free_summary}.`;
    const openapi = (await get("/openapi.json")).body;
    expect(openapi.info.description).toContain(sentence);
    expect(openapi.components.securitySchemes.apiKey.description).toContain(sentence);
    expect((await get("/llms.txt")).text).toContain(sentence);
  });
});
