import {
  BATCH_SCHEME,
  CREDIT_HEADERS,
  CREDIT_TOP_UPS,
  CREDITS_PATH,
  DEFAULT_PLANS,
  ENDPOINTS,
  type Endpoint,
  NETWORKS,
  type Plans,
  SIGN_IN_HEADER,
} from "@tollgate/catalog";
import type { PaymentMethod } from "../payment-methods.ts";
import { describeMethods, schemeNames } from "../payment-methods.ts";
import { creditsLlms } from "./credits-paths.ts";
import { jsonRpcLlms } from "./json-rpc-docs.ts";
import { CHARGING_RULE, PAYMENT_IDENTIFIER_RULE, plansText } from "./wording.ts";

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
export function buildLlmsTxt(
  publicBaseUrl: string | undefined,
  methods: readonly PaymentMethod[],
  dashboardUrl?: string,
  plans: Plans = DEFAULT_PLANS,
): string {
  const base = publicBaseUrl ?? "{base_url}";
  const schemes = (protocol: string) => schemeNames(methods, protocol).map((n) => `\`${n}\``);
  const x402 = schemes("x402");
  const mpp = schemes("mpp");
  const tokens = (protocol: string) =>
    [
      ...new Set(methods.filter((m) => m.protocol === protocol).map((m) => `${m.symbol} on ${m.network}`)),
    ].join(", ");
  /** "`charge` in pathUSD, USDC.e, `session` in USDC.e on eip155:4217". */
  const mppIntents = () => {
    const mine = methods.filter((m) => m.protocol === "mpp");
    const intents = [...new Set(mine.map((m) => m.scheme))].map((intent) => {
      const symbols = [...new Set(mine.filter((m) => m.scheme === intent).map((m) => m.symbol))];
      return `\`${intent}\` in ${symbols.join(" or ")}`;
    });
    return `${intents.join(", ")} on ${[...new Set(mine.map((m) => m.network))].join(", ")}`;
  };
  const lines = [
    "# Tollgate Ethereum RPC Gateway",
    "",
    "> Pay-per-call HTTP gateway to live Ethereum JSON-RPC. Every response is fetched fresh from the node (nothing cached).",
    "",
    ...(publicBaseUrl ? [] : ["`{base_url}` below is the address you reach this gateway at.", ""]),
    "## Authenticate or pay",
    "- API-key plan: `Authorization: Bearer <API key>`. Daily and monthly quotas per account; X-Quota-* headers on every response.",
    `  - Plans: ${plansText(plans, describeMethods(methods))}`,
    `  - Get a key: sign in with an Ethereum wallet (EIP-4361) at ${dashboardUrl ? `the [dashboard](${dashboardUrl})` : "the operator's dashboard"} to create, revoke and replace keys and see usage; its JSON API is the \`account\` tag of [/openapi.json](${base}/openapi.json).`,
    `  - Prepaid credits: when an account's plan window is spent (or the account is credits-only), its API-key calls pay their price from its credits (answered calls only) and carry \`${CREDIT_HEADERS.remaining.name}\` (the balance after, USDC). Buy them: \`POST ${base}${CREDITS_PATH}?amount=${CREDIT_TOP_UPS.join("|")}\` (see Buy prepaid credits).`,
    x402.length
      ? `- x402 (v2): call without credentials, read the base64 JSON \`PAYMENT-REQUIRED\` header of the 402 (schemes ${x402.join(", ")}; ${tokens("x402")}), retry with \`Payment-Signature\`. Official clients: @x402/fetch, @x402/axios.`
      : "- x402: not accepted by this deployment right now.",
    ...(x402.includes(`\`${BATCH_SCHEME.spec}\``)
      ? [
          `  - \`${BATCH_SCHEME.spec}\` (offered under the official name \`${BATCH_SCHEME.official}\` too): the first call deposits into a payment channel (on chain, gas ours), then each call is paid with a signed cumulative voucher (off chain; a call with no answer charges nothing). Money back: the official client scheme's \`refund(url)\` (a GET of a paid URL with a \`refund\` payload; no node call) returns the unspent deposit within the settlement worker's next pass, answered 204 with \`PAYMENT-RESPONSE\` carrying the refund transaction and amount; \`refund(url, { amount })\` returns part of it. One refund per deposit (a second request is answered with the first), none below the minimum refund (its gas: refused, naming the minimum; the rest comes back with the idle refund), a few per payer an hour. What was charged is claimed in the same transaction. Idle channels are refunded without asking. Official client: \`BatchSettlementEvmScheme\` from \`@x402/evm/batch-settlement/client\`.`,
        ]
      : []),
    ...(x402.length
      ? [
          `  - ${PAYMENT_IDENTIFIER_RULE}`,
          `  - Discovery: every 402's \`PAYMENT-REQUIRED\` declares the x402 \`bazaar\` extension (the call's method, route template, query or body and answer as JSON Schema; \`resource.serviceName\` and \`tags\`), and [/.well-known/x402](${base}/.well-known/x402) lists every paid resource with the offers its 402 makes (the x402 discovery-list shape).`,
        ]
      : []),
    ...(x402.length && publicBaseUrl
      ? [
          `- Sign-in-with-x (x402 extension; a wallet with an account: a dashboard sign-in made one, or a credits top-up made one paid from credits only): the 402's \`PAYMENT-REQUIRED\` carries a \`sign-in-with-x\` challenge (this domain, a fresh nonce, valid 5 minutes). Sign it (EIP-4361) and retry with \`${SIGN_IN_HEADER.name}\`: the call is served on the wallet's account (its plan, then its credits), no key, no payment. One proof per call; a replayed, expired, other-domain or badly signed proof is 401 \`sign_in_invalid\`; a wallet without an account 402 \`no_account\`, an account without credits for the call 402 \`insufficient_credits\` (both with the offers to pay per call). Official client: @x402/extensions/sign-in-with-x (\`wrapFetchWithSIWx(fetch, account)\`, or \`createSIWxClientExtension({ signers: [account] })\` registered on the @x402/fetch client, which pays when the sign-in is refused with a 402).`,
        ]
      : []),
    ...(mpp.length
      ? [
          `- MPP (Machine Payments Protocol): call without credentials; the 402 carries one \`WWW-Authenticate: Payment\` challenge per offer (method \`tempo\`; ${mppIntents()}), each valid for 5 minutes. Retry with \`Authorization: Payment <credential>\`; a paid answer carries \`Payment-Receipt\` and \`meta.cost_usdc\`, \`meta.payment_chain\`, \`meta.payment_token\` (the token used). Official client: mppx (\`Mppx.create({ methods: [tempo.charge({ account })] }).fetch(url)\`).`,
          ...(mpp.includes("`charge`")
            ? [
                "  - `charge`: one transfer per call, in any offered token: a signed transaction (Tollgate broadcasts it only when the node answered) or the hash of one you broadcast (a call with no answer leaves that credential usable for a retry until its challenge expires).",
              ]
            : []),
          ...(mpp.includes("`session`")
            ? [
                "  - `session`: the first call opens a payment channel with a deposit (on chain), then each call is paid with a signed cumulative voucher (off chain; a call with no answer charges nothing). Top up or close with a bodiless `POST` of the top-up or close credential to the last paid URL (answered 204 with the receipt; no node call). Close settles exactly what was spent and refunds the rest. Official client: `tempo.session.manager({ account })` (`fetch`, `topUp`, `close`).",
              ]
            : []),
        ]
      : ["- MPP (Machine Payments Protocol): not accepted by this deployment right now."]),
    `- What is charged: ${CHARGING_RULE}`,
    "",
    ...creditsLlms(methods, base),
    ...jsonRpcLlms(base),
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
    `- [Pricing](${base}/api/pricing), [Networks](${base}/api/networks), [OpenAPI 3.1](${base}/openapi.json), [x402 discovery list](${base}/.well-known/x402), [Usage of your key](${base}/api/account/usage), [Health](${base}/health)`,
    "",
  ];
  return lines.join("\n");
}
