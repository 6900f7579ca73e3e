// x402's `bazaar` extension (discovery), declared in every x402 402 with the official helpers of
// @x402/extensions: the call's method, its route template (`/api/chain/block/:number`) and the path
// parameters of this URL, its query (and for a POST its JSON body) with their JSON Schemas, and the
// answer's JSON Schema, all from the catalog entry (describeCall). A facilitator that catalogs paid
// resources reads it from the payment a client echoes it in; GET /.well-known/x402 lists it too.
//
// The official helper declares the query or the body, and the output only with an example; the
// catalog has schemas, not example answers, and a POST here takes query parameters too. Those two
// parts are added in the shape the specification gives them (its POST example's `queryParams`; the
// helper's `output` with `example` described by the answer's schema), so `info` still validates
// against `schema` with the package's validateDiscoveryExtension.
import { describeCall, type Endpoint, type Json } from "@tollgate/catalog";
import { BAZAAR, bazaarResourceServerExtension, declareDiscoveryExtension } from "@x402/extensions/bazaar";

type Extension = { info: { input: Json; output?: Json }; schema: { properties: Json & { input: Json } } };

/** The declaration for a call of an entry with this query, before enrichment. */
function declaration(endpoint: Endpoint, query: Record<string, string>): Extension {
  const call = describeCall(endpoint);
  const pathParamsSchema = call.path;
  const made = (call.method === "GET"
    ? declareDiscoveryExtension({ input: query, inputSchema: call.query, pathParamsSchema })
    : declareDiscoveryExtension({
        bodyType: "json",
        input: call.bodyExample ?? {},
        inputSchema: call.body ?? {},
        pathParamsSchema,
      }))[BAZAAR.key] as unknown as Extension;
  const input = made.schema.properties.input as { properties: Json };
  return {
    info: {
      input: call.method === "GET" ? made.info.input : { ...made.info.input, queryParams: query },
      output: { type: "json" },
    },
    schema: {
      ...made.schema,
      properties: {
        ...made.schema.properties,
        input:
          call.method === "GET"
            ? made.schema.properties.input
            : {
                ...made.schema.properties.input,
                properties: { ...input.properties, queryParams: { type: "object", ...call.query } },
              },
        output: {
          type: "object",
          properties: { type: { type: "string" }, example: call.output },
          required: ["type"],
        },
      },
    },
  };
}

/**
 * The `bazaar` extension of the 402 for `url` (absolute or a path) of a paid resource: declared
 * for its entry, with this URL's query, then enriched by the package's server extension (the method,
 * and for a templated path the `routeTemplate` and this URL's path parameters).
 */
export function bazaarExtension(endpoint: Endpoint, url: string): Record<string, unknown> {
  const { pathname, searchParams } = new URL(url, "http://localhost");
  const query = Object.fromEntries(searchParams);
  const call = describeCall(endpoint);
  const extension = declaration(endpoint, query);
  const enrich = bazaarResourceServerExtension.enrichDeclaration;
  const context = { method: call.method, adapter: { getPath: () => pathname }, routePattern: call.route };
  return { [BAZAAR.key]: enrich ? enrich(extension, context) : extension };
}
