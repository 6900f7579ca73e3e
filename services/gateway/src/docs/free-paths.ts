// The free endpoints in the OpenAPI document: pricing, networks, the key owner's usage, the
// documents themselves and the health check.
import { describePlan, type Json, moreThanFree, type Plans } from "@tollgate/catalog";
import { creditsPricingSchema } from "./credits-paths.ts";
import type { PayDocs } from "./payment-docs.ts";
import { beforeRouting, envelopeOf, errorResponse } from "./schema.ts";

/** One plan in /api/pricing (`api_key_plan`, `free_plan`). */
function planSchema(description: string): Json {
  const count = (what: string) => ({ type: "integer", minimum: 0, description: `${what}; 0 = uncapped.` });
  return {
    type: "object",
    description,
    required: ["header", "daily_quota", "monthly_quota", "burst_per_second", "windows", "get"],
    properties: {
      header: { type: "string" },
      daily_quota: count("Calls a UTC day"),
      monthly_quota: count("Calls a calendar month"),
      burst_per_second: {
        type: "integer",
        minimum: 0,
        description: "The burst guard: calls a second (0 = none).",
      },
      windows: { type: "string" },
      get: { type: "string", description: "How to get an account on this plan." },
      more: { type: "string", description: "How to get more than this plan." },
    },
  };
}

function freeOperation(id: string, summary: string, contentType: string, schema: Json): Json {
  return {
    get: {
      operationId: id,
      summary,
      tags: ["free"],
      security: [],
      responses: {
        "200": { description: "OK", content: { [contentType]: { schema } } },
        ...beforeRouting(),
      },
    },
  };
}

/** /api/pricing, /api/networks and /api/account/usage. */
export function freeApiPaths(plans: Plans, pay: PayDocs): Json {
  const paths: Json = {};
  paths["/api/pricing"] = freeOperation(
    "pricing",
    "Per-endpoint prices, accepted payment methods and the API-key plans",
    "application/json",
    envelopeOf({
      type: "object",
      properties: {
        currency: { type: "string" },
        endpoints: { type: "array", items: { type: "object" } },
        payment_methods: {
          type: "array",
          items: {
            type: "object",
            properties: {
              protocol: { type: "string", enum: ["x402", "mpp"] },
              scheme: {
                type: "string",
                description: `The payment scheme (x402) or intent (MPP): ${pay.text}.`,
              },
              offered_as: {
                type: "array",
                items: { type: "string" },
                description:
                  "x402 only: the names the 402's offers give this scheme (`accepts[].scheme`); x402-batch is offered as `batch-settlement` (the official name) and `x402-batch`.",
              },
            },
          },
        },
        api_key_plan: planSchema(`The standard plan: ${describePlan(plans.standard)}.`),
        free_plan: planSchema(
          `The free plan a first dashboard sign-in gives: ${describePlan(plans.free)}. ${moreThanFree(pay.text)}`,
        ),
        credits: creditsPricingSchema,
        quorum_reads: {
          type: "array",
          description:
            "Networks whose operator asks several nodes for some methods' answers (a quorum read): a call of those methods, from a REST endpoint or /rpc, is answered only when `agree` of the `asked` nodes give the same answer at the same block; when they do not, 502 `upstream_disagreement`, not charged. The extra node calls are Tollgate's: the price is the endpoint's or the method's own. Empty: every answer comes from one node.",
          items: {
            type: "object",
            required: ["network", "methods", "agree", "asked"],
            properties: {
              network: { type: "string" },
              methods: { type: "array", items: { type: "string" }, description: "JSON-RPC node methods." },
              agree: { type: "integer", minimum: 2 },
              asked: { type: "integer", minimum: 2 },
            },
          },
        },
      },
    }),
  );
  paths["/api/networks"] = freeOperation(
    "networks",
    "Networks served",
    "application/json",
    envelopeOf({ type: "object" }),
  );
  paths["/api/account/usage"] = {
    get: {
      operationId: "accountUsage",
      summary: "Daily usage of the key's account (free, not counted)",
      tags: ["free"],
      security: [{ apiKey: [] }],
      parameters: [
        { name: "days", in: "query", required: false, schema: { type: "string", pattern: "^[0-9]{1,3}$" } },
      ],
      responses: {
        ...beforeRouting(),
        "200": {
          description: "OK",
          content: { "application/json": { schema: envelopeOf({ type: "object" }) } },
        },
        "400": errorResponse(
          "`invalid_parameter`: `days` is not an integer from 1 to 366. `malformed_request`: the HTTP request itself is malformed.",
        ),
        "401": errorResponse("Missing or invalid key."),
        "403": errorResponse("`subscription_inactive`: the key's subscription is not active."),
        "429": {
          description: "`rate_limited`: the burst guard chain calls share (flat shape, Retry-After: 1).",
          headers: { "Retry-After": { schema: { type: "integer" } } },
          content: { "application/json": { schema: { $ref: "#/components/schemas/LimitError" } } },
        },
        "503": errorResponse("`service_unavailable`: usage cannot be read right now; retry with backoff."),
      },
    },
  };
  return paths;
}

/**
 * GET /.well-known/x402, in the x402 specification's discovery-list shape (v2 section 8,
 * `GET /discovery/resources`; routes/discovery.ts).
 */
const X402_DISCOVERY_SCHEMA: Json = {
  type: "object",
  required: ["x402Version", "items", "pagination"],
  properties: {
    x402Version: { type: "integer", const: 2 },
    items: {
      type: "array",
      description:
        "One per paid resource: each chain endpoint (`resource` its path template in the `:param` form) and each top-up amount.",
      items: {
        type: "object",
        required: ["resource", "type", "x402Version", "accepts", "lastUpdated"],
        properties: {
          resource: { type: "string" },
          type: { type: "string", const: "http" },
          x402Version: { type: "integer" },
          accepts: {
            type: "array",
            items: { type: "object" },
            description: "The offers (PaymentRequirements) the resource's 402 makes.",
          },
          lastUpdated: { type: "string", description: "When the list was built (ISO 8601)." },
          description: { type: "string" },
          mimeType: { type: "string" },
          serviceName: { type: "string" },
          tags: { type: "array", items: { type: "string" } },
          extensions: {
            type: "object",
            description: "`bazaar`: the call described as the 402 declares it (x402 bazaar extension).",
          },
          metadata: { type: "object" },
        },
      },
    },
    pagination: { type: "object" },
  },
};

/** The documents and the health check. */
export function servicePaths(): Json {
  const paths: Json = {};
  paths["/openapi.json"] = freeOperation("openapi", "This document", "application/json", { type: "object" });
  paths["/.well-known/openapi.json"] = freeOperation(
    "openapiWellKnown",
    "This document",
    "application/json",
    { type: "object" },
  );
  const discovery = freeOperation(
    "x402Discovery",
    "Every paid resource with its x402 offers (the x402 discovery list)",
    "application/json",
    X402_DISCOVERY_SCHEMA,
  );
  // The offers are payment-verifier's: until a first list could be read from it, none to serve.
  (discovery.get as { responses: Json }).responses["503"] = errorResponse(
    "`service_unavailable`: no list could be built yet (the payment offers are unavailable); retry with backoff.",
  );
  paths["/.well-known/x402"] = discovery;
  paths["/llms.txt"] = freeOperation("llms", "Index for language-model use", "text/plain", {
    type: "string",
  });
  paths["/health"] = freeOperation(
    "health",
    "Front door liveness only: stays green during an upstream outage",
    "application/json",
    { type: "object", properties: { status: { type: "string" } } },
  );
  return paths;
}
