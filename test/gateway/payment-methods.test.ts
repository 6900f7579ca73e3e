// Through the live mesh: /api/pricing lists what payment-verifier's DescribeMethods says it
// accepts, and every text that tells a client how to pay per call — the 402, the 403, a volume
// 429, /openapi.json and /llms.txt — names exactly those methods.
import { describe, expect, it } from "vitest";
import { describeMethods, type PaymentMethod } from "../../services/gateway/src/payment-methods.ts";
import { createAccountWithKey, updateAccount } from "../support/accounts.ts";
import { get } from "../support/gateway.ts";

const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

describe("accepted payment methods, from payment-verifier alone", () => {
  it("names the methods of /api/pricing in the 402, 403 and 429 texts, OpenAPI and llms.txt", async () => {
    const pricing = await get("/api/pricing");
    const methods = (pricing.body.data.payment_methods as (PaymentMethod & { pay_to: string })[]).map(
      (m) => ({
        ...m,
        payTo: m.pay_to,
      }),
    );
    expect(methods.map((m) => `${m.protocol}/${m.scheme}`)).toContain("x402/exact");
    const text = describeMethods(methods);

    const unpaid = await get("/api/chain/block-number");
    expect(unpaid.status).toBe(402);
    expect(unpaid.body.error.message).toContain(`pay per call with ${text}`);

    const { accountId, apiKey } = await createAccountWithKey({ daily: 10, monthly: 1 });
    expect((await get("/api/chain/chain-id", bearer(apiKey))).status).toBe(200);
    const spent = await get("/api/chain/chain-id", bearer(apiKey));
    expect(spent.status).toBe(429);
    expect(spent.body).toMatchObject({ error: "monthly_limit_exceeded" });
    expect(spent.body.message).toContain(`pay per call with ${text}`);

    await updateAccount(accountId, { status: "past_due" });
    const inactive = await get("/api/chain/chain-id", bearer(apiKey));
    expect(inactive.status).toBe(403);
    expect(inactive.body.error.message).toContain(`pay per call with ${text}`);

    const openapi = await get("/openapi.json");
    expect(openapi.body.info.description).toContain(`Pay per call with ${text}`);
    const llms = await get("/llms.txt");
    for (const m of methods) expect(llms.text).toContain(`\`${m.scheme}\``);
  });
});
