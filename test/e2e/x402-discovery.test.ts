// How agents and x402 catalogs discover Tollgate (issue 32): every x402 402 declares the `bazaar`
// extension, read here as a facilitator reads it (the official @x402/extensions helpers, from the
// payment the official client makes); GET /.well-known/x402 lists every paid resource with the
// offers its 402 makes; and the scheme names the 402 offers are the names every document gives.
import {
  DISCOVERY_SERVICE,
  describeCall,
  type Endpoint,
  offeredSchemeNames,
  PAID_RESOURCES,
} from "@tollgate/catalog";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import {
  BAZAAR,
  type DiscoveredHTTPResource,
  type DiscoveryExtension,
  type DiscoveryResourcesResponse,
  extractDiscoveryInfo,
  validateDiscoveryExtension,
  validateDiscoveryExtensionSpec,
} from "@x402/extensions/bazaar";
import request from "supertest";
import { describe, expect, it } from "vitest";
import { get, mesh, metricSum, post } from "../support/gateway.ts";
import { x402Payer } from "../support/x402.ts";
import { devnet } from "./x402.support.ts";

const payer = x402Payer(devnet, "payer7");

/** The resource's catalog example as a request target: path values filled in, example query. */
function exampleTarget(e: Endpoint): string {
  let path = e.path;
  for (const [k, v] of Object.entries(e.example.path ?? {})) path = path.replace(`{${k}}`, v);
  const query = new URLSearchParams(e.example.query ?? {}).toString();
  return `${path}${query && !path.includes("?") ? `?${query}` : ""}`;
}

/** The 402 an unpaid call of the resource's example gets, decoded by the official decoder. */
async function offerOf(e: Endpoint): Promise<PaymentRequired> {
  const target = exampleTarget(e);
  const res = e.method === "GET" ? await get(target) : await post(target, e.example.body ?? {});
  expect(res.status, `${e.path}: ${JSON.stringify(res.body)}`).toBe(402);
  return decodePaymentRequiredHeader(String(res.headers["payment-required"]));
}

/** `/api/chain/block/{number}` as bazaar's routeTemplate writes it: `/api/chain/block/:number`. */
const colonForm = (path: string) => path.replace(/\{(\w+)\}/g, ":$1");

describe("the x402 bazaar extension in every 402", () => {
  it("describes each paid resource (chain endpoints and top-ups) from its catalog entry, as a facilitator reads it from the client's payment", async () => {
    expect(PAID_RESOURCES.map((e) => e.path)).toContain("/api/credits?amount=5");
    for (const e of PAID_RESOURCES) {
      const offer = await offerOf(e);
      expect(offer.resource).toMatchObject({
        serviceName: DISCOVERY_SERVICE.name,
        tags: [...DISCOVERY_SERVICE.tags],
        description: e.summary,
      });
      const extension = offer.extensions?.[BAZAAR.key] as DiscoveryExtension;
      // Its info validates against its schema (what a facilitator must check before cataloging).
      expect(validateDiscoveryExtension(extension), e.path).toEqual({ valid: true });
      expect(validateDiscoveryExtensionSpec(extension as unknown as Record<string, unknown>)).toEqual({
        valid: true,
      });
      // The schemas are the catalog's: query (or body), path parameters, and the answer.
      const call = describeCall(e);
      const input = extension.schema.properties.input.properties as Record<string, Record<string, unknown>>;
      expect(input.queryParams).toEqual({ type: "object", ...call.query });
      if (call.path) expect(input.pathParams).toEqual({ type: "object", ...call.path });
      if (e.method === "POST") expect(input.body).toEqual(call.body);
      expect(extension.schema.properties.output?.properties?.example).toEqual(call.output);

      // The official client echoes it in its payment; the package's facilitator helper reads it.
      const payload = await payer.http.createPaymentPayload(offer);
      const found = extractDiscoveryInfo(payload, payload.accepted) as DiscoveredHTTPResource | null;
      expect(found, e.path).not.toBeNull();
      const route = colonForm(e.path.split("?")[0] ?? "");
      expect(found).toMatchObject({
        resourceUrl: `${mesh.gatewayUrl}${route}`,
        method: e.method,
        serviceName: DISCOVERY_SERVICE.name,
        tags: [...DISCOVERY_SERVICE.tags],
        x402Version: 2,
      });
      // A templated path: its template (the catalog key) and this URL's values.
      expect(found?.routeTemplate).toBe(e.params.path ? route : undefined);
      const info = found?.discoveryInfo.input as Record<string, unknown>;
      if (e.params.path) expect(info.pathParams).toEqual(e.example.path);
      const query = Object.fromEntries(new URL(`${mesh.gatewayUrl}${exampleTarget(e)}`).searchParams);
      expect(info.queryParams).toEqual(query);
      if (e.method === "POST") expect(info).toMatchObject({ bodyType: "json", body: e.example.body ?? {} });
    }
  });
});

describe("GET /.well-known/x402", () => {
  it("lists every paid resource in the x402 discovery-list shape, each with exactly the offers and bazaar its 402 makes", async () => {
    const res = await get("/.well-known/x402");
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.headers["access-control-allow-origin"]).toBe("*");
    expect(res.headers["payment-required"]).toBeUndefined();
    const list = res.body as DiscoveryResourcesResponse;
    expect(list.x402Version).toBe(2);
    expect(list.pagination).toEqual({
      limit: PAID_RESOURCES.length,
      offset: 0,
      total: PAID_RESOURCES.length,
    });
    expect(list.items.map((i) => i.resource)).toEqual(
      PAID_RESOURCES.map((e) => `${mesh.gatewayUrl}${colonForm(e.path)}`),
    );
    for (const [n, e] of PAID_RESOURCES.entries()) {
      const item = list.items[n];
      const offer = await offerOf(e);
      expect(item, e.path).toMatchObject({
        type: "http",
        x402Version: 2,
        description: e.summary,
        mimeType: "application/json",
        serviceName: DISCOVERY_SERVICE.name,
        tags: [...DISCOVERY_SERVICE.tags],
      });
      expect(item?.accepts, e.path).toEqual(offer.accepts);
      expect(item?.extensions?.[BAZAAR.key], e.path).toEqual(offer.extensions?.[BAZAAR.key]);
      expect(Date.parse(item?.lastUpdated ?? "")).toBeGreaterThan(0);
    }
  });

  it("is built once and shared, not per request: 100 reads get the same list and cost payment-verifier one build at most", async () => {
    const challenges = () =>
      metricSum("payment-verifier", "grpc_server_handling_seconds_count", { grpc_method: "Challenge" });
    const before = await challenges();
    const reads = await Promise.all(
      Array.from({ length: 100 }, () => request(mesh.gatewayUrl).get("/.well-known/x402")),
    );
    const texts = new Set(reads.map((r) => r.text));
    expect(reads.every((r) => r.status === 200)).toBe(true);
    expect(texts.size).toBe(1);
    expect(reads[0]?.headers["cache-control"]).toBe("public, max-age=60");
    // One Challenge per paid resource for a (re)build, none per read...
    const after = await challenges();
    expect(after - before).toBeLessThanOrEqual(PAID_RESOURCES.length);
    // ...where one unpaid call costs one (the count is live).
    expect((await get("/api/chain/block-number")).status).toBe(402);
    expect(await challenges()).toBe(after + 1);
  });
});

describe("the scheme names the 402 offers, in every document", () => {
  it("/api/pricing, llms.txt and /openapi.json name batch-settlement beside x402-batch, as the 402's accepts do", async () => {
    const offered = new Set((await offerOf(PAID_RESOURCES[0] as Endpoint)).accepts.map((a) => a.scheme));
    expect([...offered]).toEqual(["exact", "batch-settlement", "x402-batch"]);

    const pricing = (await get("/api/pricing")).body.data as {
      payment_methods: { protocol: string; scheme: string; offered_as?: string[] }[];
    };
    const x402 = pricing.payment_methods.filter((m) => m.protocol === "x402");
    expect(new Set(x402.flatMap((m) => m.offered_as ?? []))).toEqual(offered);
    expect(x402.find((m) => m.scheme === "x402-batch")?.offered_as).toEqual(offeredSchemeNames("x402-batch"));

    const llms = (await get("/llms.txt")).text;
    expect(llms).toContain("schemes `exact`, `batch-settlement`, `x402-batch`");
    expect(llms).toContain(`${mesh.gatewayUrl}/.well-known/x402`);

    const doc = (await get("/openapi.json")).body;
    expect(doc.components.securitySchemes.x402.description).toContain(
      "schemes `exact`, `batch-settlement`, `x402-batch`",
    );
    expect(doc.info.description).toContain("x402 (exact, batch-settlement, x402-batch)");
    const intents = doc.paths["/api/chain/block-number"].get["x-payment-info"].offers
      .filter((o: { method: string }) => o.method === "x402")
      .map((o: { intent: string }) => o.intent);
    expect(new Set(intents)).toEqual(offered);
    expect(doc.paths["/.well-known/x402"].get.security).toEqual([]);
  });
});
