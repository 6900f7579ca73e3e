// The paid chain endpoints in the OpenAPI document: one operation per catalog entry, with its
// parameters, errors by status, the charging rule per status, and the ways to pay for it.
import {
  CREDIT_HEADERS,
  ENDPOINTS,
  type Endpoint,
  ERRORS,
  type Json,
  jsonSchema,
  QUOTA_HEADERS,
} from "@tollgate/catalog";
import { type PayDocs, paymentOffers } from "./payment-docs.ts";
import { BEFORE_ROUTING, errorResponse, parameters, ref } from "./schema.ts";

const quotaHeaders = Object.fromEntries(Object.values(QUOTA_HEADERS).map((h) => [h.name, ref(h.name)]));
const creditHeaders = { [CREDIT_HEADERS.remaining.name]: ref(CREDIT_HEADERS.remaining.name) };

function operation(endpoint: Endpoint, pay: PayDocs): Json {
  const statuses = new Set<number>([400, 401, 402, 403, 500, 502, 503, 504]);
  // Any answer can be over the byte caps; everything else 404/422 is the endpoint's own.
  const own = new Set<string>([...endpoint.errors, "result_too_large"]);
  for (const code of own) statuses.add(ERRORS[code as keyof typeof ERRORS].status);
  for (const code of BEFORE_ROUTING) statuses.add(ERRORS[code].status);
  const errors: Json = {};
  for (const status of [...statuses].sort()) {
    const entries = Object.entries(ERRORS).filter(
      ([code, e]) => e.status === status && ((status !== 404 && status !== 422) || own.has(code)),
    );
    const codes = entries.map(([code, e]) => `\`${code}\`: ${e.description}`);
    const charged = entries
      .filter(([, e]) => (e as { charged?: true }).charged)
      .map(([code]) => `\`${code}\``);
    const response = errorResponse(
      `${codes.join(" ") || "Error."}${charged.length ? ` Charged (the node answered): ${charged.join(", ")}; a paid call's answer carries the receipt and meta.cost_usdc.` : ""}`,
    );
    if (charged.length) response.headers = { ...creditHeaders, ...pay.receipts };
    errors[String(status)] = response;
  }
  return {
    operationId: endpoint.id,
    summary: endpoint.summary,
    description: `${endpoint.description}\n\nPrice: ${endpoint.price} USD per call. Upstream: ${endpoint.upstream}.`,
    tags: ["chain"],
    "x-price-usd": endpoint.price,
    parameters: [...parameters(endpoint.params.path, "path"), ...parameters(endpoint.params.query, "query")],
    ...(endpoint.params.body
      ? {
          requestBody: {
            required: true,
            content: { "application/json": { schema: jsonSchema(endpoint.params.body, "input") } },
          },
        }
      : {}),
    security: pay.security,
    ...(pay.offers402.length ? { "x-payment-info": { offers: paymentOffers(endpoint, pay.offers402) } } : {}),
    responses: {
      "200": {
        description:
          "Success. API-key calls carry the X-Quota-* headers, and X-Credits-Remaining when paid from prepaid credits (the plan spent); paid calls carry their receipt.",
        headers: { ...quotaHeaders, ...creditHeaders, ...pay.receipts },
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["data", "error", "meta"],
              properties: {
                data: jsonSchema(endpoint.data, "output"),
                error: { type: "null" },
                meta: { $ref: "#/components/schemas/Meta" },
              },
            },
          },
        },
      },
      ...errors,
      "402": {
        description: `Payment required or refused. Nothing was charged.${pay.text ? ` Pay per call with ${pay.text}.` : ""} ${codesOf(402)}`,
        headers: pay.offers,
        content: { "application/json": { schema: { $ref: "#/components/schemas/PaymentRefusal" } } },
      },
      ...(pay.offers402.some((m) => m.protocol === "x402")
        ? {
            "409": {
              description: `An x402 payment identifier's retry that cannot be answered from the first request. Nothing was charged. ${codesOf(409)}`,
              headers: {
                "Retry-After": {
                  schema: { type: "integer" },
                  description: "payment_identifier_in_progress only.",
                },
              },
              content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" } } },
            },
          }
        : {}),
      "429": {
        description: "A quota window or the burst guard was hit (flat shape, spec 7).",
        headers: {
          ...quotaHeaders,
          "Retry-After": { schema: { type: "integer" }, description: "rate_limited only." },
        },
        content: { "application/json": { schema: { $ref: "#/components/schemas/LimitError" } } },
      },
    },
  };
}

/** "`code`: description" of every error code answered with `status`. */
function codesOf(status: number): string {
  return Object.entries(ERRORS)
    .filter(([, e]) => e.status === status)
    .map(([code, e]) => `\`${code}\`: ${e.description}`)
    .join(" ");
}

/** Every chain endpoint, by path. */
export function chainPaths(pay: PayDocs): Json {
  const paths: Json = {};
  for (const endpoint of ENDPOINTS) {
    paths[endpoint.path] = { [endpoint.method.toLowerCase()]: operation(endpoint, pay) };
  }
  return paths;
}
