// POST /api/credits in the OpenAPI document, /api/pricing and llms.txt, from the catalog's one
// description (CREDITS_ENDPOINT, TOP_UP_PRODUCTS): parameters, the answers, and the offers.
import {
  CREDIT_HEADERS,
  CREDIT_TOP_UPS,
  CREDITS_ENDPOINT,
  CREDITS_PATH,
  ERRORS,
  type Json,
  jsonSchema,
  priceAtomic,
  TOP_UP_KEY_HEADER,
  TOP_UP_PRODUCTS,
} from "@tollgate/catalog";
import { describeMethods, type PaymentMethod } from "../payment-methods.ts";
import { type PayDocs, payDocs, paymentOffers } from "./payment-docs.ts";
import { beforeRouting, envelopeOf, errorResponse, parameters } from "./schema.ts";

/** The accepted methods a top-up can be paid with (the catalog's payWith; MPP's schemes are intents). */
function topUpMethods(methods: readonly PaymentMethod[]): PaymentMethod[] {
  const payWith: readonly string[] = CREDITS_ENDPOINT.payWith;
  return methods.filter((m) => payWith.includes(m.protocol === "mpp" ? `mpp-${m.scheme}` : m.scheme));
}

/** "x402 (exact) or MPP (charge)", as this deployment takes top-ups now. */
function topUpMethodsText(methods: readonly PaymentMethod[]): string {
  return describeMethods(topUpMethods(methods));
}

/** The 402's message for a top-up without a payment. */
export function topUpRequiredMessage(methods: readonly PaymentMethod[], amount: string): string {
  const text = topUpMethodsText(methods);
  return text
    ? `payment required: ${amount} USDC of prepaid credits, paid with ${text} (the offers are in this answer's PAYMENT-REQUIRED and WWW-Authenticate headers)`
    : "payment required: no top-up payment can be taken right now";
}

/**
 * /api/pricing's `credits`: how to buy them (`buy`, `top_ups_usdc`), when they are spent (`spend`),
 * and per amount its atomic price and path, the methods that pay a top-up now, where it goes.
 */
export function creditsPricing(methods: readonly PaymentMethod[]): Json {
  return {
    buy: `POST ${CREDITS_PATH}?amount=<one of top_ups_usdc>, paid with ${topUpMethodsText(methods) || "no method right now"}: credited to the paying wallet's account (made credits only when new: buying credits gives no plan volume), or to the account of the API key sent with it`,
    top_ups_usdc: CREDIT_TOP_UPS,
    spend: `an API-key call whose plan window is spent (or whose account is credits-only) pays its price from the account's credits: exactly the calls the node answered, as every way to pay; its answer carries ${CREDIT_HEADERS.remaining.name} (the balance after it, USDC) and meta.cost_usdc`,
    top_ups: TOP_UP_PRODUCTS.map((p) => ({
      amount_usdc: p.price,
      amount_usdc_atomic: priceAtomic(p.price).toString(),
      path: `${CREDITS_PATH}?amount=${p.price}`,
    })),
    payment_methods: topUpMethods(methods).map((m) => ({
      protocol: m.protocol,
      scheme: m.scheme,
      network: m.network,
      symbol: m.symbol,
    })),
    api_key: `Authorization: Bearer <API key>, or ${TOP_UP_KEY_HEADER}: <API key> beside an MPP credential (which takes Authorization)`,
  };
}

/** The pricing's `credits` member in the OpenAPI document. */
export const creditsPricingSchema: Json = {
  type: "object",
  description: "Prepaid credits: how to buy them and when API-key calls spend them.",
  required: ["buy", "top_ups_usdc", "spend", "top_ups", "payment_methods", "api_key"],
  properties: {
    buy: { type: "string" },
    top_ups_usdc: { type: "array", items: { type: "string" }, description: "Top-up amounts offered, USDC." },
    spend: { type: "string" },
    top_ups: {
      type: "array",
      description:
        "Each top-up: its amount in USDC and in atomic units (6 decimals), and where it is bought.",
      items: {
        type: "object",
        required: ["amount_usdc", "amount_usdc_atomic", "path"],
        properties: {
          amount_usdc: { type: "string" },
          amount_usdc_atomic: { type: "string" },
          path: { type: "string" },
        },
      },
    },
    payment_methods: {
      type: "array",
      items: { type: "object" },
      description: "The accepted payment methods a top-up can be paid with now.",
    },
    api_key: { type: "string", description: "How a top-up names the API key whose account it credits." },
  },
};

/** POST /api/credits. */
export function creditsPaths(methods: readonly PaymentMethod[]): Json {
  const e = CREDITS_ENDPOINT;
  // The ways a top-up is paid: offers, receipts and security of those methods alone.
  const mine = topUpMethods(methods);
  const pay: PayDocs = payDocs(mine);
  const data = jsonSchema(e.data, "output");
  const receipts = pay.receipts;
  const errors: Json = { ...beforeRouting() };
  for (const [status, codes] of [
    [400, ["invalid_parameter", "unknown_parameter"]],
    [401, ["invalid_api_key"]],
    [403, ["subscription_inactive"]],
    [503, ["service_unavailable"]],
  ] as const) {
    errors[String(status)] = errorResponse(
      codes.map((c) => `\`${c}\`: ${ERRORS[c].description}`).join(" ") || "Error.",
    );
  }
  return {
    [e.path]: {
      post: {
        operationId: e.id,
        summary: e.summary,
        description: `${e.description}\n\nAmounts: ${CREDIT_TOP_UPS.join(", ")} USDC (\`amount\`, default ${CREDIT_TOP_UPS[0]}). Paid with ${pay.text || "nothing right now"}. A retried payment is refused (402): each settlement is credited once.`,
        tags: ["credits"],
        parameters: [
          ...parameters(e.params.query, "query"),
          {
            name: TOP_UP_KEY_HEADER,
            in: "header",
            required: false,
            description:
              "The API key whose account is credited, when `Authorization` carries an MPP credential (else send `Authorization: Bearer <API key>`). Without a key, the paying wallet's account is credited.",
            schema: { type: "string" },
          },
        ],
        // Nothing is read from a body (the amount is in the query); stated, as discovery expects of a POST.
        requestBody: {
          required: false,
          description: "None: the amount is the `amount` query parameter; a body is ignored.",
          content: { "application/json": { schema: { type: "object" } } },
        },
        security: pay.security,
        ...(mine.length
          ? {
              "x-payment-info": {
                offers: TOP_UP_PRODUCTS.flatMap((p) => paymentOffers(p, mine)),
              },
            }
          : {}),
        responses: {
          "200": {
            description: "Settled and credited: the receipt in the headers, the new balance in `data`.",
            headers: receipts,
            content: { "application/json": { schema: envelopeOf(data) } },
          },
          "202": {
            description:
              "Settled (the receipt is in the headers), credit pending: the account is credited from the settlement ledger within a minute, once. Do not pay again.",
            headers: receipts,
            content: { "application/json": { schema: envelopeOf(data) } },
          },
          ...errors,
          "402": {
            description: `Payment required or refused. Nothing was charged.${pay.text ? ` Pay with ${pay.text}.` : ""}`,
            headers: pay.offers,
            content: { "application/json": { schema: { $ref: "#/components/schemas/PaymentRefusal" } } },
          },
          "429": {
            description:
              "Too many payment attempts, or API-key lookups, from this client (flat shape, spec 7).",
            headers: { "Retry-After": { schema: { type: "integer" } } },
            content: { "application/json": { schema: { $ref: "#/components/schemas/LimitError" } } },
          },
        },
      },
    },
  };
}

/** The llms.txt lines on buying credits (how they are spent is said with the API-key plan). */
export function creditsLlms(methods: readonly PaymentMethod[], base: string): string[] {
  const text = topUpMethodsText(methods);
  if (!text) return [];
  const mpp = topUpMethods(methods).some((m) => m.protocol === "mpp");
  return [
    "## Buy prepaid credits",
    `- \`POST ${base}${CREDITS_PATH}?amount=${CREDIT_TOP_UPS.join("|")}\` (USDC; default ${CREDIT_TOP_UPS[0]}) answers 402 with offers for that amount; pay it with ${text} through the official client (\`wrapFetchWithPayment(fetch, client)(url, { method: "POST" })\`${mpp ? ", or mppx's `fetch`" : ""}). 200: the receipt and \`data.balance_usdc\`; 202: paid, credit pending (applied within a minute, once): do not pay again.`,
    `- Credited to the paying wallet's account (made credits only when new: a dashboard sign-up gives the free plan), or to your API key's account when you send the key (\`Authorization: Bearer <key>\`${mpp ? `, or \`${TOP_UP_KEY_HEADER}: <key>\` beside an MPP credential` : ""}).`,
    "",
  ];
}
