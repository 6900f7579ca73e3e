import { Validator } from "@seriousme/openapi-schema-validator";
import {
  ACCOUNT_API,
  ACCOUNT_ERRORS,
  ENDPOINTS,
  type Endpoint,
  ERRORS,
  LIMIT_ERRORS,
  NETWORKS,
  priceAtomic,
  validateRequest,
} from "@tollgate/catalog";
import { validate as validateDiscovery } from "mppx/discovery";
import request from "supertest";
import { beforeAll, describe, expect, it } from "vitest";
import { createAccountWithKey } from "../support/accounts.ts";
import { devnet } from "../support/devnet.ts";
import { get, mesh } from "../support/gateway.ts";
import { dayUsed, SUITE_BURST } from "../support/quota.ts";

// The machine-readable descriptions (OpenAPI, llms.txt, pricing, networks) against the
// catalog and the spec, and the free endpoints without credentials.

// biome-ignore lint/suspicious/noExplicitAny: JSON documents walked by key in assertions.
type Json = Record<string, any>;

/** The spec's price table (section 4); network-info's price is not shown there. */
const SPEC_PRICES: Record<string, string> = {
  "GET /api/chain/allowance": "0.003",
  "GET /api/chain/block-number": "0.001",
  "GET /api/chain/block/{number}": "0.003",
  "POST /api/chain/call": "0.005",
  "GET /api/chain/chain-id": "0.001",
  "GET /api/chain/code/{address}": "0.003",
  "GET /api/chain/contract/{address}": "0.005",
  "GET /api/chain/ens/{input}": "0.005",
  "GET /api/chain/erc1155-balance": "0.003",
  "GET /api/chain/erc20-balance": "0.003",
  "GET /api/chain/erc20-transfers": "0.005",
  "GET /api/chain/erc721-tokens": "0.008",
  "POST /api/chain/estimate-gas": "0.004",
  "GET /api/chain/events": "0.005",
};

const FREE = [
  "/api/pricing",
  "/api/networks",
  "/openapi.json",
  "/.well-known/openapi.json",
  "/llms.txt",
  "/.well-known/x402",
  "/health",
];

let doc: Json;

beforeAll(async () => {
  const res = await get("/openapi.json");
  expect(res.status).toBe(200);
  doc = res.body;
});

/** Follows a local `$ref` ("#/components/...") once. */
function deref(node: Json): Json {
  if (typeof node?.$ref !== "string") return node;
  return node.$ref
    .slice(2)
    .split("/")
    .reduce((at: Json, key: string) => at?.[key.replaceAll("~1", "/").replaceAll("~0", "~")], doc);
}

describe("/openapi.json", () => {
  it("is served identically at /.well-known/openapi.json, as OpenAPI 3.1.0 version 1.0.0", async () => {
    const wellKnown = await get("/.well-known/openapi.json");
    expect(wellKnown.status).toBe(200);
    expect(wellKnown.headers["content-type"]).toMatch(/^application\/json/);
    expect(wellKnown.body).toEqual(doc);
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("1.0.0");
  });

  it("passes the OpenAPI 3.1 schema validator", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors, JSON.stringify(result.errors, null, 1)).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("lists the spec's 15 chain endpoints at the spec's prices, and the advertised capabilities at the README's", () => {
    // Row 15 (network-info) and the capabilities the spec names without paths (transactions,
    // receipts, native-coin balance, NFT metadata): prices chosen in the README.
    const chosen: Record<string, string> = {
      "GET /api/chain/network-info": "0.003",
      "GET /api/chain/balance/{address}": "0.002",
      "GET /api/chain/nft-metadata/{contract}/{token_id}": "0.005",
      "GET /api/chain/receipt/{hash}": "0.003",
      "GET /api/chain/transaction/{hash}": "0.003",
    };
    expect(ENDPOINTS).toHaveLength(Object.keys(SPEC_PRICES).length + Object.keys(chosen).length);
    const chainPaths = Object.keys(doc.paths).filter((p) => p.startsWith("/api/chain/"));
    expect(chainPaths.sort()).toEqual(ENDPOINTS.map((e) => e.path).sort());
    for (const e of ENDPOINTS) {
      const op = doc.paths[e.path][e.method.toLowerCase()];
      expect(op, `${e.method} ${e.path}`).toBeDefined();
      expect(op["x-price-usd"]).toBe(e.price);
      expect(op.operationId).toBe(e.id);
      const key = `${e.method} ${e.path}`;
      expect(e.price, key).toBe(SPEC_PRICES[key] ?? chosen[key]);
    }
  });

  it("describes each endpoint's parameters and body as the catalog validates them", () => {
    for (const e of ENDPOINTS as readonly Endpoint[]) {
      const op = doc.paths[e.path][e.method.toLowerCase()];
      const expected = (["path", "query"] as const).flatMap((where) =>
        Object.entries(e.params[where]?.shape ?? {}).map(([name, field]) => ({
          name,
          in: where,
          required: where === "path" || !(field as Endpoint["data"]).safeParse(undefined).success,
        })),
      );
      expect(
        op.parameters.map((p: Json) => ({ name: p.name, in: p.in, required: p.required })),
        e.path,
      ).toEqual(expected);
      const network = op.parameters.find((p: Json) => p.name === "network");
      expect(network.schema.enum).toEqual(e.networks);
      expect(network.schema.default).toBe("ethereum");
      if (e.params.body) {
        expect(op.requestBody.required).toBe(true);
        const schema = op.requestBody.content["application/json"].schema;
        expect(Object.keys(schema.properties).sort()).toEqual(Object.keys(e.params.body.shape).sort());
        expect(schema.additionalProperties).toBe(false);
      } else {
        expect(op.requestBody).toBeUndefined();
      }
    }
    const max = doc.paths["/api/chain/erc721-tokens"].get.parameters.find((p: Json) => p.name === "max");
    expect(max.required).toBe(false);
  });

  it("declares the ways to pay or authenticate that work (API key, x402, MPP), and every chain endpoint accepts each", () => {
    const schemes = doc.components.securitySchemes;
    expect(schemes.apiKey).toMatchObject({ type: "http", scheme: "bearer" });
    expect(schemes.x402).toMatchObject({ type: "apiKey", in: "header", name: "Payment-Signature" });
    expect(schemes.x402.description).toContain("exact");
    expect(schemes.signInWithX).toMatchObject({ type: "apiKey", in: "header", name: "SIGN-IN-WITH-X" });
    expect(schemes.mpp).toMatchObject({ type: "http", scheme: "Payment" });
    expect(schemes.mpp.description).toMatch(/`charge`, `session`/);
    for (const e of ENDPOINTS) {
      expect(doc.paths[e.path][e.method.toLowerCase()].security).toEqual([
        { apiKey: [] },
        { x402: [] },
        { signInWithX: [] },
        { mpp: [] },
      ]);
    }
  });

  it("documents the dashboard's JSON API under the tag account, from the catalog's one description, served by the dashboard", () => {
    expect(doc.tags.map((t: Json) => t.name)).toContain("account");
    const ops = Object.values(ACCOUNT_API);
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item as Json)
        .filter(([, op]) => (op as Json).tags?.includes("account"))
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented.sort()).toEqual(ops.map((o) => `${o.method} ${o.path}`).sort());
    for (const op of ops) {
      const item = doc.paths[op.path];
      expect(item.servers, op.path).toEqual([
        { url: mesh.dashboardUrl, description: "The account dashboard" },
      ]);
      const described = item[op.method.toLowerCase()];
      expect(described.operationId).toBe(op.id);
      expect(described.security).toEqual(op.session ? [{ dashboardSession: [] }] : []);
      for (const code of op.errors) {
        expect(
          described.responses[String(ACCOUNT_ERRORS[code].status)].description,
          `${op.id} ${code}`,
        ).toContain(`\`${code}\``);
      }
    }
    expect(
      doc.paths["/api/dashboard/sign-in"].post.requestBody.content["application/json"].schema.required,
    ).toEqual(["message", "signature"]);
    expect(doc.components.securitySchemes.dashboardSession).toMatchObject({
      type: "apiKey",
      in: "cookie",
      name: "tollgate_session",
    });
  });

  it("passes mppx/discovery's validator: x-service-info at the root, x-payment-info (atomic prices, every way to pay) and a 402 on every paid operation", () => {
    expect(validateDiscovery(doc)).toEqual([]);
    expect(doc["x-service-info"]).toMatchObject({
      docs: { apiReference: `${mesh.gatewayUrl}/openapi.json`, llms: `${mesh.gatewayUrl}/llms.txt` },
    });
    const { tempo, settlement } = devnet.demo;
    for (const e of ENDPOINTS) {
      const op = doc.paths[e.path][e.method.toLowerCase()];
      expect(op.responses["402"]).toBeDefined();
      const amount = String(priceAtomic(e.price));
      expect(
        op["x-payment-info"].offers.map((o: Json) => [o.method, o.intent, o.currency, o.amount]),
      ).toEqual([
        ["x402", "exact", settlement.usdc.address, amount],
        ["x402", "batch-settlement", settlement.usdc.address, amount],
        ["x402", "x402-batch", settlement.usdc.address, amount],
        ["tempo", "charge", tempo.pathUsd.address, amount],
        ["tempo", "charge", tempo.usdce.address, amount],
        ["tempo", "session", tempo.usdce.address, amount],
      ]);
    }
  });

  it("documents 401/402/403/429/5xx, the flat 429 shape and the X-Quota headers", () => {
    const quotaHeaders = [
      "X-Quota-Day-Limit",
      "X-Quota-Day-Used",
      "X-Quota-Month-Limit",
      "X-Quota-Month-Used",
    ];
    for (const name of quotaHeaders) {
      expect(doc.components.headers[name].schema).toEqual({ type: "integer" });
      expect(doc.components.headers[name].description).toEqual(expect.any(String));
    }
    for (const e of ENDPOINTS) {
      const responses = doc.paths[e.path][e.method.toLowerCase()].responses;
      for (const status of ["200", "400", "401", "402", "403", "429", "500", "502", "503", "504"]) {
        expect(responses[status], `${e.path} ${status}`).toBeDefined();
      }
      for (const code of e.errors) {
        expect(
          responses[String(ERRORS[code as keyof typeof ERRORS].status)],
          `${e.path} ${code}`,
        ).toBeDefined();
      }
      for (const status of ["200", "429"]) {
        expect(Object.keys(responses[status].headers)).toEqual(expect.arrayContaining(quotaHeaders));
        for (const name of quotaHeaders) expect(deref(responses[status].headers[name])).toBeDefined();
      }
      expect(deref(responses["402"].headers["PAYMENT-REQUIRED"])).toBeDefined();
      expect(deref(responses["429"].content["application/json"].schema).properties.error.enum).toEqual(
        Object.keys(LIMIT_ERRORS),
      );
      expect(responses["429"].headers["Retry-After"]).toBeDefined();
      const envelope = deref(responses["401"].content["application/json"].schema);
      expect(envelope.required).toEqual(["data", "error", "meta"]);
      expect(envelope.properties.error.properties.code.enum).toEqual(Object.keys(ERRORS));
      const ok = responses["200"].content["application/json"].schema;
      expect(ok.required).toEqual(["data", "error", "meta"]);
      expect(deref(ok.properties.meta).required).toEqual(["endpoint", "request_id"]);
    }
  });

  it("lists the free endpoints without security", () => {
    for (const path of FREE) expect(doc.paths[path]?.get?.security, path).toEqual([]);
  });
});

describe("/llms.txt", () => {
  let text: string;
  beforeAll(async () => {
    const res = await get("/llms.txt");
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    text = res.text;
  });

  it("lists every endpoint with its price and a runnable example", () => {
    for (const e of ENDPOINTS) {
      const line = text.split("\n").find((l) => l.includes(`${e.method} ${e.path}]`));
      expect(line, `${e.method} ${e.path}`).toBeDefined();
      expect(line).toContain(`${e.price} USD`);
      expect(line).toMatch(/Example: `curl /);
      // Double quotes, so a shell expands $KEY.
      expect(line).toContain('-H "Authorization: Bearer $KEY"');
    }
    for (const n of NETWORKS) expect(text).toContain(`\`${n.name}\` (chain id ${n.chainIdHex})`);
  });

  it("tells an agent where to get an API key: the dashboard's address (DASHBOARD_URL)", () => {
    expect(text).toContain(
      `Get a key: sign in with an Ethereum wallet (EIP-4361) at the [dashboard](${mesh.dashboardUrl})`,
    );
  });

  it("gives examples the gateway accepts as valid input", async () => {
    const { apiKey } = await createAccountWithKey({ burst: SUITE_BURST });
    for (const e of ENDPOINTS) {
      const line = text.split("\n").find((l) => l.includes(`${e.method} ${e.path}]`)) ?? "";
      const url = /curl (?:-X POST )?'([^']+)'/.exec(line)?.[1];
      expect(url, line).toBeDefined();
      const parsed = new URL(url ?? "");
      expect(parsed.origin).toBe(mesh.gatewayUrl);
      const body = /-d '([^']*)'/.exec(line)?.[1];
      const path = parsed.pathname + parsed.search;
      // Checked offline against the catalog, then sent: mainnet addresses need not exist on the devnet.
      const params = Object.fromEntries(parsed.searchParams);
      const template = new RegExp(`^${e.path.replace(/\{(\w+)\}/g, "(?<$1>[^/]+)")}$`);
      const pathParams = template.exec(decodeURIComponent(parsed.pathname))?.groups ?? {};
      expect(validateRequest(e, { path: pathParams, query: params, body: body && JSON.parse(body) }).ok).toBe(
        true,
      );
      const res =
        e.method === "GET"
          ? await request(mesh.gatewayUrl).get(path).set("Authorization", `Bearer ${apiKey}`)
          : await request(mesh.gatewayUrl)
              .post(path)
              .set({ Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" })
              .send(body ?? "{}");
      expect(res.status, `${line}\n${JSON.stringify(res.body)}`).not.toBe(400);
      expect(res.status).toBeLessThan(500);
    }
  });
});

describe("/api/pricing and /api/networks", () => {
  it("/api/pricing lists every endpoint's price and x402 exact on the devnet settlement chain", async () => {
    const res = await get("/api/pricing");
    expect(res.status).toBe(200);
    expect(res.body.error).toBeNull();
    const { endpoints, payment_methods: methods } = res.body.data;
    expect(endpoints).toHaveLength(ENDPOINTS.length);
    for (const e of ENDPOINTS) {
      expect(endpoints).toContainEqual(
        expect.objectContaining({
          method: e.method,
          path: e.path,
          price_usd: e.price,
          networks: [...e.networks],
        }),
      );
    }
    const atomic = endpoints.find((p: Json) => p.path === "/api/chain/erc721-tokens").price_usdc_atomic;
    expect(atomic).toBe("8000");

    const settlement = devnet.demo.settlement;
    const x402 = methods.find((m: Json) => m.protocol === "x402" && m.scheme === "exact");
    expect(x402, JSON.stringify(methods)).toBeDefined();
    expect(x402.network).toBe(settlement.network);
    expect(x402.asset.toLowerCase()).toBe(settlement.usdc.address.toLowerCase());
    expect(x402.pay_to.toLowerCase()).toBe(settlement.payTo.toLowerCase());
    expect(x402.decimals).toBe(6);
  });

  it("/api/networks lists ethereum, sepolia and the third network with the endpoints each serves", async () => {
    const res = await get("/api/networks");
    expect(res.status).toBe(200);
    const { networks } = res.body.data;
    const third = NETWORKS.find((n) => n.scope === "network-info")!;
    const all = ENDPOINTS.map((e) => e.path).sort();
    expect(networks.map((n: Json) => [n.name, n.chain_id])).toEqual([
      ["ethereum", "0x1"],
      ["sepolia", "0xaa36a7"],
      [third.name, "0x1237"],
    ]);
    const byName = Object.fromEntries(networks.map((n: Json) => [n.name, n]));
    expect([...byName.ethereum.endpoints].sort()).toEqual(all);
    expect([...byName.sepolia.endpoints].sort()).toEqual(all);
    expect(byName[third.name].endpoints).toEqual(["/api/chain/network-info"]);
    expect(byName.sepolia.testnet).toBe(true);
    expect(res.body.data.default).toBe("ethereum");
  });
});

describe("free endpoints", () => {
  it("answer without credentials, carry no quota headers, and do not count against a key", async () => {
    for (const path of FREE) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers["x-quota-day-used"]).toBeUndefined();
      expect(res.headers["payment-required"]).toBeUndefined();
    }
    const { apiKey } = await createAccountWithKey({ burst: SUITE_BURST });
    const auth = { Authorization: `Bearer ${apiKey}` };
    const before = await dayUsed(apiKey);
    for (const path of FREE) {
      const res = await get(path, auth);
      expect(res.status, path).toBe(200);
      expect(res.headers["x-quota-day-used"]).toBeUndefined();
    }
    expect(await dayUsed(apiKey)).toBe(before + 1);
  });
});
