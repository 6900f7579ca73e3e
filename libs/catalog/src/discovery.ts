// How Tollgate describes itself to agents and x402 catalogs (the `bazaar` extension every x402 402
// declares, and GET /.well-known/x402), stated once: every paid resource, the service's name and
// tags, the names each payment scheme is offered under, and each paid resource's call (PAID_RESOURCES)
// described as JSON Schema from its catalog entry: a new paid resource is described by its entry.
import type { Endpoint } from "./endpoint-shape.ts";
import { RPC_ANSWER_JSON_SCHEMA, RPC_ENDPOINT, RPC_REQUEST_JSON_SCHEMA } from "./json-rpc.ts";
import { type Json, jsonSchema, META_SCHEMA } from "./json-schema.ts";

/** The service as x402 catalogs show it (`resource.serviceName`, `resource.tags`: ≤ 32 ASCII, ≤ 5 tags). */
export const DISCOVERY_SERVICE = {
  name: "Tollgate",
  tags: ["ethereum", "json-rpc", "blockchain", "web3", "evm"],
} as const;

/**
 * x402's batched scheme by its two names: `x402-batch` as the service specification names it,
 * `batch-settlement` as the official SDK (and every official client) does. The 402 offers it under
 * both, the official name first.
 */
export const BATCH_SCHEME = { spec: "x402-batch", official: "batch-settlement" } as const;

/**
 * The `accepts[].scheme` names a payment-verifier scheme is offered under in an x402 402 (its own
 * name, or x402-batch's two). Every document that names the schemes reads them here.
 */
export function offeredSchemeNames(scheme: string): readonly string[] {
  return scheme === BATCH_SCHEME.spec ? [BATCH_SCHEME.official, BATCH_SCHEME.spec] : [scheme];
}

/** One paid resource's call, as the `bazaar` extension describes it. */
export interface CallDescription {
  method: Endpoint["method"];
  /** The path template in the `:param` form (`/api/chain/block/:number`); no query. */
  route: string;
  /** JSON Schema of the query parameters (an object schema). */
  query: Json;
  /** JSON Schema of the path parameters, for a templated path. */
  path?: Json;
  /** JSON Schema of the JSON body, for a POST (an empty object when it takes none). */
  body?: Json;
  /** The worked example's body, for a POST. */
  bodyExample?: Record<string, string>;
  /** JSON Schema of the 200's envelope: the endpoint's `data`, `error` null, and `meta`. */
  output: Json;
}

const described = new WeakMap<Endpoint, CallDescription>();

/** The call of a paid resource described from its catalog entry (made once per entry). */
export function describeCall(entry: Endpoint): CallDescription {
  // A JSON-RPC body's endpoint (priced for it) is described as the endpoint is.
  const endpoint: Endpoint = entry.id === RPC_ENDPOINT.id ? RPC_ENDPOINT : entry;
  const known = described.get(endpoint);
  if (known) return known;
  if (endpoint.id === RPC_ENDPOINT.id) {
    const rpc: CallDescription = {
      method: "POST",
      route: RPC_ENDPOINT.path.replace(/\{(\w+)\}/g, ":$1"),
      query: jsonSchema(RPC_ENDPOINT.params.query, "input"),
      path: jsonSchema(RPC_ENDPOINT.params.path, "input"),
      body: RPC_REQUEST_JSON_SCHEMA,
      bodyExample: RPC_ENDPOINT.example.body,
      output: RPC_ANSWER_JSON_SCHEMA,
    };
    described.set(endpoint, rpc);
    return rpc;
  }
  // A top-up is named with its amount (`/api/credits?amount=5`): the route is its path alone.
  const path = endpoint.path.split("?")[0] ?? endpoint.path;
  const description: CallDescription = {
    method: endpoint.method,
    route: path.replace(/\{(\w+)\}/g, ":$1"),
    query: jsonSchema(endpoint.params.query, "input"),
    ...(endpoint.params.path ? { path: jsonSchema(endpoint.params.path, "input") } : {}),
    ...(endpoint.method === "POST"
      ? {
          body: endpoint.params.body
            ? jsonSchema(endpoint.params.body, "input")
            : { type: "object", properties: {}, additionalProperties: false },
          bodyExample: endpoint.example.body ?? {},
        }
      : {}),
    output: {
      type: "object",
      required: ["data", "error", "meta"],
      properties: {
        data: jsonSchema(endpoint.data, "output"),
        error: { type: "null" },
        meta: META_SCHEMA,
      },
    },
  };
  described.set(endpoint, description);
  return description;
}
