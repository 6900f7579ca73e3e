// What /api/pricing and /llms.txt say of the JSON-RPC endpoint, from the catalog's one table.
import { priceAtomic, RPC_BATCH_MAX, RPC_ENDPOINT, RPC_METHODS } from "@tollgate/catalog";

/** /api/pricing's `json_rpc`: the path, the batch bound and every served method's price. */
export function jsonRpcPricing() {
  return {
    method: RPC_ENDPOINT.method,
    path: RPC_ENDPOINT.path,
    networks: RPC_ENDPOINT.networks,
    batch_max: RPC_BATCH_MAX,
    batch_price:
      "the sum of its relayed calls' prices; calls answered here (not served, bad params) are free",
    methods: Object.entries(RPC_METHODS).map(([name, m]) => ({
      method: name,
      price_usd: m.price,
      price_usdc_atomic: priceAtomic(m.price).toString(),
    })),
  };
}

/** The llms.txt section. */
export function jsonRpcLlms(base: string): string[] {
  return [
    "## JSON-RPC (viem, ethers, web3.py unchanged)",
    `- \`POST ${base}${RPC_ENDPOINT.path}\` (network: ${RPC_ENDPOINT.networks.join(", ")}): a JSON-RPC 2.0 request or a batch of up to ${RPC_BATCH_MAX}, relayed to the node and answered as the node answers (ids echoed, node errors as JSON-RPC errors, no envelope).`,
    `- Served methods and prices (a batch costs the sum): ${Object.entries(RPC_METHODS)
      .map(([name, m]) => `\`${name}\` ${m.price}`)
      .join(", ")}. Any other method: error -32601, free; bad params: -32602, free.`,
    "- Pay as for every endpoint: `Authorization: Bearer <API key>` (one plan unit per call in a batch, or its price from credits), or without credentials: the 402 offers the body's own price (x402, MPP). Refusals keep their HTTP status and headers (402 `PAYMENT-REQUIRED`, 401, 429 `X-Quota-*`) with a JSON-RPC error body whose `error.data.code` is the API's code.",
    `- viem: \`createPublicClient({ transport: http("${base}/rpc/ethereum", { fetchOptions: { headers: { Authorization: "Bearer <key>" } } }) })\`, or \`http(url, { fetchFn: wrapFetchWithPayment(fetch, x402Client) })\` to pay per call.`,
    "",
  ];
}
