import { ENDPOINTS, type Endpoint, NETWORKS } from "@tollgate/catalog";
import type { PaymentMethod } from "../payment-methods.ts";
import { CHARGING_RULE } from "./openapi.ts";

function example(endpoint: Endpoint, base: string): string {
  let path = endpoint.path;
  for (const [k, v] of Object.entries(endpoint.example.path ?? {})) path = path.replace(`{${k}}`, v);
  const query = new URLSearchParams(endpoint.example.query ?? {}).toString();
  const url = `${base}${path}${query ? `?${query}` : ""}`;
  if (endpoint.method === "POST") {
    return `curl -X POST '${url}' -H 'Content-Type: application/json' -H "Authorization: Bearer $KEY" -d '${JSON.stringify(endpoint.example.body ?? {})}'`;
  }
  return `curl '${url}' -H "Authorization: Bearer $KEY"`;
}

/**
 * /llms.txt: what the API does, how to pay, every endpoint with its price and an example.
 * Links are absolute under the configured public base URL; without one, `{base_url}` stands
 * for it (the document never echoes what a caller sent as Host).
 */
export function buildLlmsTxt(publicBaseUrl: string | undefined, methods: readonly PaymentMethod[]): string {
  const base = publicBaseUrl ?? "{base_url}";
  const schemes = (protocol: string) => [
    ...new Set(methods.filter((m) => m.protocol === protocol).map((m) => `\`${m.scheme}\``)),
  ];
  const x402 = schemes("x402");
  const mpp = schemes("mpp");
  const tokens = (protocol: string) =>
    [
      ...new Set(methods.filter((m) => m.protocol === protocol).map((m) => `${m.symbol} on ${m.network}`)),
    ].join(", ");
  const lines = [
    "# Tollgate Ethereum RPC Gateway",
    "",
    "> Pay-per-call HTTP gateway to live Ethereum JSON-RPC. Every response is fetched fresh from the node (nothing cached).",
    "",
    ...(publicBaseUrl ? [] : ["`{base_url}` below is the address you reach this gateway at.", ""]),
    "## Authenticate or pay",
    "- API-key plan: `Authorization: Bearer <API key>`. Daily and monthly quotas per account; X-Quota-* headers on every response.",
    x402.length
      ? `- x402 (v2): call without credentials, read the base64 JSON \`PAYMENT-REQUIRED\` header of the 402 (schemes ${x402.join(", ")}; ${tokens("x402")}), retry with \`Payment-Signature\`. Official clients: @x402/fetch, @x402/axios.`
      : "- x402: not accepted by this deployment right now.",
    mpp.length
      ? `- MPP (Machine Payments Protocol): the 402 carries \`WWW-Authenticate: Payment\` challenges (intents ${mpp.join(", ")}; ${tokens("mpp")}); retry with \`Authorization: Payment <credential>\`. Official client: mppx.`
      : "- MPP (Machine Payments Protocol): not accepted by this deployment right now.",
    `- What is charged: ${CHARGING_RULE}`,
    "",
    "## Responses",
    '- Envelope: `{"data": {...} | null, "error": null | {"code","message"}, "meta": {"endpoint","request_id", paid: "cost_usdc","payment_chain","payment_token"}}`.',
    '- 429 is flat: `{"error": "daily_limit_exceeded" | "monthly_limit_exceeded" | "rate_limited", "message"}`; only rate_limited sets Retry-After: 1.',
    "- Quantities are 0x hex strings; token balances are decimal strings.",
    "",
    `## Networks\n${NETWORKS.map((n) => `- \`${n.name}\` (chain id ${n.chainIdHex})${n.scope === "all" ? "" : ": network-info only"}`).join("\n")}`,
    "Pass `?network=<name>`; default ethereum.",
    "",
    "## Endpoints",
    ...ENDPOINTS.map(
      (e) =>
        `- [${e.method} ${e.path}](${base}/openapi.json): ${e.summary}. ${e.price} USD. Example: \`${example(e, base)}\``,
    ),
    "",
    "## Free",
    `- [Pricing](${base}/api/pricing), [Networks](${base}/api/networks), [OpenAPI 3.1](${base}/openapi.json), [Usage of your key](${base}/api/account/usage), [Health](${base}/health)`,
    "",
  ];
  return lines.join("\n");
}
