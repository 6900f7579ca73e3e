import {
  ACCOUNT_API,
  ACCOUNT_ERRORS,
  AccountError,
  type AccountOperation,
  CSRF_HEADER,
  DEFAULT_PLANS,
  describePlan,
  ENDPOINTS,
  type Endpoint,
  ERRORS,
  LIMIT_ERRORS,
  moreThanFree,
  NETWORKS,
  PAYMENT_HEADERS,
  type Plans,
  priceAtomic,
  QUOTA_HEADERS,
  SESSION_COOKIE,
} from "@tollgate/catalog";
import { z } from "zod";
import { describeMethods, type PaymentMethod } from "../payment-methods.ts";

/**
 * OpenAPI 3.1.0 document derived from the catalog: the same zod schemas that
 * validate requests describe them here, so the document cannot drift from behaviour.
 */

type Json = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: "input" | "output"): Json {
  const out = z.toJSONSchema(schema, { target: "draft-2020-12", io, unrepresentable: "any" }) as Json;
  delete out.$schema;
  return out;
}

function parameters(schema: z.ZodObject | undefined, where: "path" | "query"): Json[] {
  if (!schema) return [];
  return Object.entries(schema.shape).map(([name, field]) => {
    const s = jsonSchema(field as z.ZodType, "input");
    const description = typeof s.description === "string" ? s.description : undefined;
    return {
      name,
      in: where,
      required: where === "path" || !(field as z.ZodType).safeParse(undefined).success,
      ...(description ? { description } : {}),
      schema: s,
    };
  });
}

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });

/**
 * The API-key plans in words, from the figures quota-meter states (DescribePlans), the same
 * wherever they are told (OpenAPI, llms.txt).
 */
export function plansText(plans: Plans, payPerCall: string): string {
  return `Standard plan (accounts the operator makes): ${describePlan(plans.standard)}; caps are raised per account on request. Free plan (the account a first sign-in on the dashboard creates): ${describePlan(plans.free)}. ${moreThanFree(payPerCall)}`;
}

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

/** The charging rule, the same words wherever it is told (OpenAPI, llms.txt, the README). */
export const CHARGING_RULE =
  "A call the node answered is charged, whatever its status: data, a revert (422 `execution_reverted`) or a not-found from a node lookup (404 `block_not_found`, `ens_name_not_found`); a charged answer carries its payment receipt and `meta.cost_usdc`, and counts against an API key's quota. Not charged: input refused before any node call (400), 401, 402, 403, 429, and failures with no answer (5xx, timeouts, 422 `result_too_large`).";
const quotaHeaders = Object.fromEntries(Object.values(QUOTA_HEADERS).map((h) => [h.name, ref(h.name)]));
const {
  required: PAYMENT_REQUIRED,
  response: PAYMENT_RESPONSE,
  signature: PAYMENT_SIGNATURE,
} = PAYMENT_HEADERS;

function errorResponse(description: string): Json {
  return {
    description,
    content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" } } },
  };
}

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
    if (charged.length) response.headers = pay.receipts;
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
        description: "Success. API-key calls carry the X-Quota-* headers; paid calls carry their receipt.",
        headers: { ...quotaHeaders, ...pay.receipts },
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
        description: `Payment required or refused. Nothing was charged.${pay.text ? ` Pay per call with ${pay.text}.` : ""}`,
        headers: pay.offers,
        content: { "application/json": { schema: { $ref: "#/components/schemas/PaymentRefusal" } } },
      },
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

/**
 * The HTTP parser and the JSON body parser run before routing, so any request, free or paid, can
 * meet their limits: a malformed request, timeouts, header size, body size and media types.
 */
const BEFORE_ROUTING = [
  "malformed_request",
  "request_timeout",
  "payload_too_large",
  "unsupported_media_type",
  "headers_too_large",
] as const;

/** The refusals of BEFORE_ROUTING, for operations that document no other error at their status. */
const beforeRouting = (): Json =>
  Object.fromEntries(
    BEFORE_ROUTING.map((code) => [
      String(ERRORS[code].status),
      errorResponse(`\`${code}\`: ${ERRORS[code].description}`),
    ]),
  );

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

const envelopeOf = (data: Json): Json => ({
  type: "object",
  required: ["data", "error", "meta"],
  properties: { data, error: { type: "null" }, meta: { $ref: "#/components/schemas/Meta" } },
});

/** What the accepted payment methods put into the document. */
interface PayDocs {
  text: string;
  security: Json[];
  offers: Json;
  receipts: Json;
  schemes: Json;
  /** One way to pay per accepted method, for `x-payment-info`. */
  offers402: readonly PaymentMethod[];
}

/**
 * `x-payment-info` (the MPP discovery extension `mppx/discovery` validates): every way to pay for
 * this operation, its price in the token's atomic units. MPP offers name their method ("tempo")
 * and intent ("charge", "session"); x402 offers method "x402" and the scheme as the intent.
 */
function paymentOffers(endpoint: Endpoint, methods: readonly PaymentMethod[]): Json[] {
  return methods.map((m) => ({
    amount: priceAtomic(endpoint.price, m.decimals).toString(),
    currency: m.asset,
    intent: m.scheme,
    method: m.method || m.protocol,
    description: `${endpoint.summary}: ${endpoint.price} USD in ${m.symbol} on ${m.network}`,
  }));
}

function payDocs(methods: readonly PaymentMethod[]): PayDocs {
  const x402 = methods.filter((m) => m.protocol === "x402");
  const mpp = methods.filter((m) => m.protocol === "mpp");
  const names = (list: PaymentMethod[]) => [...new Set(list.map((m) => `\`${m.scheme}\``))].join(", ");
  const schemes: Json = {
    apiKey: {
      type: "http",
      scheme: "bearer",
      description: "API-key plan: `Authorization: Bearer <API key>`.",
    },
  };
  const offers: Json = {};
  const receipts: Json = {};
  if (x402.length) {
    schemes.x402 = {
      type: "apiKey",
      in: "header",
      name: PAYMENT_SIGNATURE.name,
      description: `x402 v2 payment payload (base64 JSON); schemes ${names(x402)}. Offers come in the 402's PAYMENT-REQUIRED header.`,
    };
    offers[PAYMENT_REQUIRED.name] = ref(PAYMENT_REQUIRED.name);
    receipts[PAYMENT_RESPONSE.name] = ref(PAYMENT_RESPONSE.name);
  }
  if (mpp.length) {
    schemes.mpp = {
      type: "http",
      scheme: "Payment",
      description: `MPP (Machine Payments Protocol) credential, \`Authorization: Payment <credential>\`; intents ${names(mpp)}. Challenges come in the 402's WWW-Authenticate header.`,
    };
    offers[PAYMENT_HEADERS.mppChallenge.name] = ref(PAYMENT_HEADERS.mppChallenge.name);
    receipts[PAYMENT_HEADERS.mppReceipt.name] = ref(PAYMENT_HEADERS.mppReceipt.name);
  }
  return {
    text: describeMethods(methods),
    security: Object.keys(schemes).map((name) => ({ [name]: [] })),
    offers,
    receipts,
    schemes,
    offers402: methods,
  };
}

/**
 * The dashboard's JSON API, from the one description in the catalog (the dashboard validates with
 * the same schemas). It is served by the dashboard, so each path names that server.
 */
function accountOperation(op: AccountOperation): Json {
  const codes = [...op.errors] as (keyof typeof ACCOUNT_ERRORS)[];
  const statuses = [...new Set(codes.map((c) => ACCOUNT_ERRORS[c].status))].sort();
  const params = [
    ...parameters(op.params, "path"),
    ...(op.session && op.method === "POST"
      ? [
          {
            name: CSRF_HEADER,
            in: "header",
            required: true,
            description: "The session's CSRF token (from sign-in or GET session).",
            schema: { type: "string" },
          },
        ]
      : []),
  ];
  return {
    operationId: op.id,
    summary: op.summary,
    description: op.description,
    tags: ["account"],
    security: op.session ? [{ dashboardSession: [] }] : [],
    ...(params.length ? { parameters: params } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: true,
            content: { "application/json": { schema: jsonSchema(op.body, "input") } },
          },
        }
      : {}),
    responses: {
      "200": {
        description: "OK",
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["data"],
              properties: { data: jsonSchema(op.data, "output") },
            },
          },
        },
      },
      ...Object.fromEntries(
        statuses.map((status) => [
          String(status),
          {
            description: codes
              .filter((c) => ACCOUNT_ERRORS[c].status === status)
              .map((c) => `\`${c}\`: ${ACCOUNT_ERRORS[c].description}`)
              .join(" "),
            content: { "application/json": { schema: { $ref: "#/components/schemas/AccountError" } } },
          },
        ]),
      ),
    },
  };
}

function accountPaths(dashboardUrl: string | undefined): Json {
  const servers = [
    dashboardUrl
      ? { url: dashboardUrl, description: "The account dashboard" }
      : {
          url: "{dashboard}",
          description: "The account dashboard (its own origin)",
          variables: { dashboard: { default: "http://127.0.0.1:8090" } },
        },
  ];
  const paths: Record<string, Json> = {};
  for (const op of Object.values(ACCOUNT_API) as AccountOperation[]) {
    paths[op.path] ??= { servers };
    (paths[op.path] as Json)[op.method.toLowerCase()] = accountOperation(op);
  }
  return paths;
}

export function buildOpenApi(
  serverUrl: string | undefined,
  methods: readonly PaymentMethod[],
  dashboardUrl?: string,
  plans: Plans = DEFAULT_PLANS,
): Json {
  const pay = payDocs(methods);
  const planWords = plansText(plans, pay.text);
  (pay.schemes.apiKey as Json).description =
    `API-key plan: \`Authorization: Bearer <API key>\`. ${planWords}`;
  const paths: Json = {};
  for (const endpoint of ENDPOINTS) {
    paths[endpoint.path] = { [endpoint.method.toLowerCase()]: operation(endpoint, pay) };
  }
  paths["/api/pricing"] = freeOperation(
    "pricing",
    "Per-endpoint prices, accepted payment methods and the API-key plans",
    "application/json",
    envelopeOf({
      type: "object",
      properties: {
        currency: { type: "string" },
        endpoints: { type: "array", items: { type: "object" } },
        payment_methods: { type: "array", items: { type: "object" } },
        api_key_plan: planSchema(`The standard plan: ${describePlan(plans.standard)}.`),
        free_plan: planSchema(
          `The free plan a first dashboard sign-in gives: ${describePlan(plans.free)}. ${moreThanFree(pay.text)}`,
        ),
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
  Object.assign(paths, accountPaths(dashboardUrl));
  paths["/openapi.json"] = freeOperation("openapi", "This document", "application/json", { type: "object" });
  paths["/.well-known/openapi.json"] = freeOperation(
    "openapiWellKnown",
    "This document",
    "application/json",
    { type: "object" },
  );
  paths["/llms.txt"] = freeOperation("llms", "Index for language-model use", "text/plain", {
    type: "string",
  });
  paths["/health"] = freeOperation(
    "health",
    "Front door liveness only: stays green during an upstream outage",
    "application/json",
    { type: "object", properties: { status: { type: "string" } } },
  );

  return {
    openapi: "3.1.0",
    info: {
      title: "Tollgate Ethereum RPC Gateway",
      version: "1.0.0",
      description: `Pay-per-call HTTP gateway to live Ethereum JSON-RPC. ${pay.text ? `Pay per call with ${pay.text}, or use` : "Use"} an API-key plan. Every response is fetched fresh from the node.\n\nAPI-key plans: ${planWords}\n\nWhat is charged: ${CHARGING_RULE}`,
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    // MPP discovery (mppx/discovery): what the service is and where its docs are.
    "x-service-info": {
      categories: ["blockchain", "ethereum", "json-rpc", "data"],
      docs: {
        apiReference: `${serverUrl ?? ""}/openapi.json`,
        llms: `${serverUrl ?? ""}/llms.txt`,
        ...(serverUrl ? { homepage: serverUrl } : {}),
      },
    },
    tags: [
      {
        name: "chain",
        description: `Paid chain endpoints. Networks: ${NETWORKS.map((n) => n.name).join(", ")}.`,
      },
      { name: "free", description: "Unauthenticated, not quota-counted." },
      {
        name: "account",
        description:
          "The account dashboard's JSON API (served by the dashboard, not the gateway): sign in with an Ethereum wallet (EIP-4361), create, list, revoke and replace API keys (a key is shown once), and usage against the plan.",
      },
    ],
    paths,
    components: {
      securitySchemes: {
        ...pay.schemes,
        dashboardSession: {
          type: "apiKey",
          in: "cookie",
          name: SESSION_COOKIE,
          description: "The dashboard's session (HttpOnly, SameSite=Strict), set by sign-in.",
        },
      },
      headers: Object.fromEntries([
        ...Object.values(QUOTA_HEADERS).map((h) => [
          h.name,
          { description: h.description, schema: { type: "integer" } },
        ]),
        ...[PAYMENT_REQUIRED, PAYMENT_RESPONSE, PAYMENT_HEADERS.mppChallenge, PAYMENT_HEADERS.mppReceipt].map(
          (h) => [h.name, { description: h.description, schema: { type: "string" } }],
        ),
      ]),
      schemas: {
        Meta: {
          type: "object",
          required: ["endpoint", "request_id"],
          properties: {
            endpoint: { type: "string", description: "Path template served." },
            request_id: { type: "string" },
            cost_usdc: { type: "string", description: "Paid calls: decimal price charged." },
            payment_chain: { type: "string", description: "Paid calls: settlement chain (CAIP-2)." },
            payment_token: { type: "string", description: "Paid calls: payment token address." },
          },
        },
        ErrorEnvelope: {
          type: "object",
          required: ["data", "error", "meta"],
          properties: {
            data: { type: "null" },
            error: {
              type: "object",
              required: ["code", "message"],
              properties: {
                code: { type: "string", enum: Object.keys(ERRORS) },
                message: { type: "string" },
                parameter: { type: "string", description: "The offending parameter, on 400s." },
                revert_data: { type: "string", description: "execution_reverted: raw revert data." },
                reason: { type: "string", description: "execution_reverted: decoded reason." },
              },
            },
            meta: { $ref: "#/components/schemas/Meta" },
          },
        },
        PaymentRefusal: {
          description:
            "The error envelope; when a payment protocol defines a problem for the refusal (MPP), its RFC 9457 members (type, title, status, detail) are added at the top level.",
          allOf: [{ $ref: "#/components/schemas/ErrorEnvelope" }],
          properties: {
            type: {
              type: "string",
              format: "uri",
              description: "e.g. https://paymentauth.org/problems/payment-required",
            },
            title: { type: "string" },
            status: { type: "integer" },
            detail: { type: "string" },
          },
        },
        AccountError: jsonSchema(AccountError, "output"),
        LimitError: {
          type: "object",
          required: ["error", "message"],
          properties: {
            error: { type: "string", enum: Object.keys(LIMIT_ERRORS) },
            message: { type: "string" },
            request_id: { type: "string" },
          },
        },
      },
    },
  };
}
