// What /api/pricing and /llms.txt say of the JSON-RPC endpoint, from the catalog's one table.
import {
  type Json,
  priceAtomic,
  RPC_ANSWER_JSON_SCHEMA,
  RPC_BATCH_MAX,
  RPC_ENDPOINT,
  RPC_METHODS,
  RPC_REQUEST_JSON_SCHEMA,
  RPC_WRITE_METHODS,
} from "@tollgate/catalog";
import { type PayDocs, paymentOffers } from "./payment-docs.ts";
import { parameters } from "./schema.ts";

/** /api/pricing's `json_rpc`: the path, the batch bound and every served method's price. */
export function jsonRpcPricing(sendRawTransaction = false) {
  return {
    method: RPC_ENDPOINT.method,
    path: RPC_ENDPOINT.path,
    networks: RPC_ENDPOINT.networks,
    batch_max: RPC_BATCH_MAX,
    batch_price:
      "the sum of its relayed calls' prices; calls answered here (not served, bad params) are free",
    methods: Object.entries({ ...RPC_METHODS, ...(sendRawTransaction ? RPC_WRITE_METHODS : {}) }).map(
      ([name, m]) => ({
        method: name,
        price_usd: m.price,
        price_usdc_atomic: priceAtomic(m.price).toString(),
      }),
    ),
  };
}

/** The llms.txt section. */
export function jsonRpcLlms(base: string): string[] {
  return [
    "## JSON-RPC (viem, ethers, web3.py unchanged)",
    `- \`POST ${base}${RPC_ENDPOINT.path}\` (network: ${RPC_ENDPOINT.networks.join(", ")}): a JSON-RPC 2.0 request or a batch of up to ${RPC_BATCH_MAX}, relayed to the node and answered as the node answers (ids echoed, node errors as JSON-RPC errors, no envelope).`,
    `- Served methods and prices (a batch costs the sum): ${Object.entries(RPC_METHODS)
      .map(([name, m]) => `\`${name}\` ${m.price}`)
      .join(
        ", ",
      )}. Any other method: error -32601, free; bad params: -32602, free. \`eth_sendRawTransaction\` ${RPC_WRITE_METHODS.eth_sendRawTransaction.price} only where the operator turned it on (then listed in /api/pricing).`,
    "- Pay as for every endpoint: `Authorization: Bearer <API key>` (one plan unit per call in a batch, all at once or none, or its whole price from credits; a signed-in wallet the same), or without credentials: the 402 offers the body's own price (x402, MPP). Refusals keep their HTTP status and headers (402 `PAYMENT-REQUIRED`, 401, 429 `X-Quota-*`) with a JSON-RPC error body whose `error.data.code` is the API's code.",
    `- viem: \`createPublicClient({ transport: http("${base}/rpc/ethereum", { fetchOptions: { headers: { Authorization: "Bearer <key>" } } }) })\`, or \`http(url, { fetchFn: wrapFetchWithPayment(fetch, x402Client) })\` to pay per call.`,
    "",
  ];
}

const rpcBody = (description: string) => ({
  description,
  content: {
    "application/json": {
      schema: RPC_ANSWER_JSON_SCHEMA,
    },
  },
});

/** The OpenAPI operation of POST /rpc/{network}; `offers402` priced at the cheapest call. */
export function jsonRpcPaths(pay: PayDocs): Json {
  const e = RPC_ENDPOINT;
  return {
    [e.path]: {
      post: {
        operationId: e.id,
        summary: e.summary,
        description: `${e.description}\n\nPrices per call (USD): ${Object.entries(RPC_METHODS)
          .map(([name, m]) => `${name} ${m.price}`)
          .join(
            ", ",
          )}. A batch (at most ${RPC_BATCH_MAX} calls) costs the sum of its relayed calls; a method not served (-32601) or bad params (-32602) are answered free. An API key or a signed-in wallet counts one plan unit per call, all at once or none. Without credentials the 402 offers the body's own price. Refusals keep their HTTP status and headers, with a JSON-RPC error body (error.data.code: the API's code).`,
        tags: ["json-rpc"],
        "x-price-usd": e.price,
        parameters: parameters(e.params.path, "path"),
        requestBody: {
          required: true,
          content: {
            "application/json": { schema: RPC_REQUEST_JSON_SCHEMA },
          },
        },
        security: pay.security,
        ...(pay.offers402.length ? { "x-payment-info": { offers: paymentOffers(e, pay.offers402) } } : {}),
        responses: {
          "200": rpcBody(
            "The node's answers (a batch: one per call, in order), calls answered here among them.",
          ),
          "400": rpcBody(
            "Refused before any node call: not a JSON-RPC request, an empty batch, more than the batch maximum, a network not served, an eth_getLogs range over the cap. Nothing charged.",
          ),
          "401": rpcBody("The API key is unknown or revoked."),
          "402": {
            ...rpcBody(
              `Payment required or refused, for this body's price. Nothing charged.${pay.text ? ` Pay with ${pay.text}.` : ""}`,
            ),
            headers: pay.offers,
          },
          "429": rpcBody("A quota window or the burst guard was hit (X-Quota-* headers kept)."),
          "503": rpcBody("No node answered, or a mesh service is unavailable. Nothing charged."),
        },
      },
    },
  };
}
