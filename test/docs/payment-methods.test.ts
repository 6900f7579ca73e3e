// The accepted per-call payment methods are known to payment-verifier alone (DescribeMethods); every
// text that names them is built from that one list. Fed two different lists, every document and
// message follows, and none names a method the list does not hold.
import { LIMIT_ERRORS } from "@tollgate/catalog";
import { validate as validateDiscovery } from "mppx/discovery";
import { describe, expect, it } from "vitest";
import { buildLlmsTxt } from "../../services/gateway/src/docs/llms.ts";
import { buildOpenApi } from "../../services/gateway/src/docs/openapi.ts";
import {
  describeMethods,
  inactiveMessage,
  type PaymentMethod,
  paymentRequiredMessage,
} from "../../services/gateway/src/payment-methods.ts";

const usdc = {
  network: "eip155:84532",
  asset: "0xusdc",
  symbol: "USDC",
  decimals: 6,
  payTo: "0xme",
  method: "",
};
const tempo = { ...usdc, network: "eip155:4217", method: "tempo" };
const PATH_USD = "0x20c0000000000000000000000000000000000000";
const USDC_E = "0x20C000000000000000000000b9537d11c60E8b50";
const exactOnly: PaymentMethod[] = [{ protocol: "x402", scheme: "exact", ...usdc }];
const everything: PaymentMethod[] = [
  ...exactOnly,
  { protocol: "x402", scheme: "x402-batch", ...usdc },
  { protocol: "mpp", scheme: "charge", ...tempo, asset: PATH_USD, symbol: "pathUSD" },
  { protocol: "mpp", scheme: "charge", ...tempo, asset: USDC_E, symbol: "USDC.e" },
  { protocol: "mpp", scheme: "session", ...tempo, asset: USDC_E, symbol: "USDC.e" },
];

/** Every text a user reads about how to pay, built from one list. */
function texts(methods: PaymentMethod[]) {
  const text = describeMethods(methods);
  const doc = buildOpenApi(undefined, methods) as {
    info: { description: string };
    components: { securitySchemes: Record<string, unknown> };
    paths: Record<
      string,
      Record<string, { security: unknown[]; responses: Record<string, { headers?: object }> }>
    >;
  };
  return {
    text,
    openapi: doc,
    llms: buildLlmsTxt(undefined, methods),
    messages: [
      paymentRequiredMessage(text),
      inactiveMessage(text),
      LIMIT_ERRORS.daily_limit_exceeded(text),
      LIMIT_ERRORS.monthly_limit_exceeded(text),
    ],
  };
}

describe("payment methods: one source for every text that names them", () => {
  it("names each protocol once with its schemes", () => {
    expect(describeMethods(exactOnly)).toBe("x402 (exact)");
    // x402-batch by both names its 402 offers it under (the official `batch-settlement` first).
    expect(describeMethods(everything)).toBe(
      "x402 (exact, batch-settlement, x402-batch) or MPP (charge, session)",
    );
    expect(describeMethods([])).toBe("");
  });

  it.each([
    ["x402 exact only", exactOnly, ["x402"], ["MPP", "x402-batch", "batch-settlement", "session"]],
    ["every method", everything, ["x402", "MPP", "x402-batch", "batch-settlement", "session"], []],
  ])("with %s, the 402/403/429 texts, OpenAPI and llms.txt all say so", (_name, methods, present, absent) => {
    const t = texts(methods);
    for (const message of t.messages) expect(message).toContain(t.text);
    expect(t.openapi.info.description).toContain(t.text);
    // The dashboard's session cookie is a scheme of its own operations (tag account), never of a chain call.
    expect(Object.keys(t.openapi.components.securitySchemes)).toContain("dashboardSession");
    const security = Object.keys(t.openapi.components.securitySchemes)
      .filter((s) => s !== "dashboardSession")
      .sort();
    expect(security).toEqual(
      ["apiKey", "x402", ...(methods.some((m) => m.protocol === "mpp") ? ["mpp"] : [])].sort(),
    );
    const call = t.openapi.paths["/api/chain/block-number"]?.get;
    expect(call?.security.map((s) => Object.keys(s as object)[0]).sort()).toEqual(security);
    const offers = Object.keys(call?.responses["402"]?.headers ?? {});
    expect(offers.includes("WWW-Authenticate")).toBe(methods.some((m) => m.protocol === "mpp"));
    for (const word of present) expect(t.llms).toContain(word);
    expect(t.llms.includes("MPP (Machine Payments Protocol): not accepted")).toBe(
      !methods.some((m) => m.protocol === "mpp"),
    );
    for (const word of absent) {
      for (const message of t.messages) expect(message).not.toContain(word);
      expect(t.openapi.info.description).not.toContain(word);
      expect(t.llms).not.toContain(`\`${word}\``);
    }
  });

  it("says there is no per-call payment when payment-verifier offers none", () => {
    const t = texts([]);
    expect(t.messages[0]).toBe(
      "payment required: send Authorization: Bearer <API key> (no per-call payment can be taken right now)",
    );
    expect(t.messages[2]).not.toContain("pay per call");
    expect(Object.keys(t.openapi.components.securitySchemes)).toEqual(["apiKey", "dashboardSession"]);
  });
});

type Doc = {
  paths: Record<string, Record<string, { "x-payment-info": { offers: Record<string, string>[] } }>>;
};

describe("MPP discovery (x-service-info, x-payment-info) from the same list", () => {
  it("passes mppx/discovery's validator with or without a public base URL, offering exactly the accepted methods", () => {
    for (const [base, methods] of [
      [undefined, everything],
      ["https://rpc.example", everything],
      [undefined, exactOnly],
    ] as const) {
      const doc = buildOpenApi(base, methods) as unknown as Doc;
      expect(validateDiscovery(doc)).toEqual([]);
      const op = doc.paths["/api/chain/erc721-tokens"]?.get;
      // One offer per way to pay: x402-batch under each of its two names.
      const ways = methods.length + methods.filter((m) => m.scheme === "x402-batch").length;
      expect(op?.["x-payment-info"].offers).toHaveLength(ways);
      expect(op?.["x-payment-info"].offers[0]).toMatchObject({
        amount: "8000",
        intent: "exact",
        method: "x402",
      });
    }
    const offers = (buildOpenApi(undefined, everything) as unknown as Doc).paths["/api/chain/call"]?.post?.[
      "x-payment-info"
    ] as { offers: { method: string; intent: string; currency: string }[] };
    expect(offers.offers.filter((o) => o.method === "x402").map((o) => o.intent)).toEqual([
      "exact",
      "batch-settlement",
      "x402-batch",
    ]);
    expect(offers.offers.filter((o) => o.method === "tempo").map((o) => [o.intent, o.currency])).toEqual([
      ["charge", PATH_USD],
      ["charge", USDC_E],
      ["session", USDC_E],
    ]);
  });

  it("llms.txt tells an agent how to pay with MPP (charge, session, close) only when MPP is accepted", () => {
    const llms = buildLlmsTxt(undefined, everything);
    expect(llms).toContain("`charge` in pathUSD or USDC.e, `session` in USDC.e on eip155:4217");
    expect(llms).toContain("Authorization: Payment <credential>");
    expect(llms).toMatch(/bodiless `POST` of the top-up or close credential to the last paid URL/);
    expect(buildLlmsTxt(undefined, exactOnly)).not.toContain("Payment-Receipt");
  });

  it("llms.txt and OpenAPI tell an agent that x402-batch's refund() returns its unspent deposit, only when x402-batch is accepted", () => {
    const llms = buildLlmsTxt(undefined, everything);
    expect(llms).toMatch(
      /`refund\(url\)`.*returns the unspent deposit within the settlement worker's next pass/,
    );
    expect(llms).toContain("`batch-settlement`");
    const x402 = (methods: PaymentMethod[]) =>
      (texts(methods).openapi.components.securitySchemes.x402 as { description: string }).description;
    expect(x402(everything)).toContain("refund()");
    expect(x402(exactOnly)).not.toContain("refund");
    expect(buildLlmsTxt(undefined, exactOnly)).not.toContain("refund(");
  });
});
