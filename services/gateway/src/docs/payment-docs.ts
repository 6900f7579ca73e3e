// What the accepted payment methods put into the OpenAPI document: security schemes, the 402's
// offer headers, receipts, and each operation's `x-payment-info`.
import {
  BATCH_SCHEME,
  type Endpoint,
  type Json,
  offeredSchemeNames,
  PAYMENT_HEADERS,
  priceAtomic,
  SIGN_IN_HEADER,
} from "@tollgate/catalog";
import { describeMethods, type PaymentMethod, schemeNames } from "../payment-methods.ts";
import { ref } from "./schema.ts";
import { PAYMENT_IDENTIFIER_RULE } from "./wording.ts";

const {
  required: PAYMENT_REQUIRED,
  response: PAYMENT_RESPONSE,
  signature: PAYMENT_SIGNATURE,
} = PAYMENT_HEADERS;

/** What the accepted payment methods put into the document. */
export interface PayDocs {
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
 * and intent ("charge", "session"); x402 offers method "x402" and the scheme as the intent, under
 * each name the 402 offers it by (x402-batch: `batch-settlement` and `x402-batch`).
 */
export function paymentOffers(endpoint: Endpoint, methods: readonly PaymentMethod[]): Json[] {
  return methods.flatMap((m) =>
    offeredSchemeNames(m.scheme).map((intent) => ({
      amount: priceAtomic(endpoint.price, m.decimals).toString(),
      currency: m.asset,
      intent,
      method: m.method || m.protocol,
      description: `${endpoint.summary}: ${endpoint.price} USD in ${m.symbol} on ${m.network}`,
    })),
  );
}

/** `signIn`: sign-in-with-x is offered (the gateway has a public origin to bind proofs to). */
export function payDocs(methods: readonly PaymentMethod[], signIn = false): PayDocs {
  const x402 = methods.filter((m) => m.protocol === "x402");
  const mpp = methods.filter((m) => m.protocol === "mpp");
  const names = (protocol: string) =>
    schemeNames(methods, protocol)
      .map((n) => `\`${n}\``)
      .join(", ");
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
      description: `x402 v2 payment payload (base64 JSON); schemes ${names("x402")}. Offers come in the 402's PAYMENT-REQUIRED header.${
        x402.some((m) => m.scheme === BATCH_SCHEME.spec)
          ? ` An ${BATCH_SCHEME.spec} (\`${BATCH_SCHEME.official}\`) \`refund\` payload (the official client's \`refund()\`) on any paid GET returns the channel's unspent deposit: 204 with PAYMENT-RESPONSE (the refund transaction and amount), no node call.`
          : ""
      } ${PAYMENT_IDENTIFIER_RULE}`,
    };
    offers[PAYMENT_REQUIRED.name] = ref(PAYMENT_REQUIRED.name);
    receipts[PAYMENT_RESPONSE.name] = ref(PAYMENT_RESPONSE.name);
  }
  // Its challenge rides in the x402 402 (PAYMENT-REQUIRED `extensions`).
  if (x402.length && signIn) {
    schemes.signInWithX = {
      type: "apiKey",
      in: "header",
      name: SIGN_IN_HEADER.name,
      description: `x402 sign-in-with-x: ${SIGN_IN_HEADER.description} The call is served on the wallet's account (its plan, then its credits): no key, no payment. A refused proof is 401 \`sign_in_invalid\`; a wallet without an account 402 \`no_account\`, without credits for the call 402 \`insufficient_credits\`.`,
    };
  }
  if (mpp.length) {
    schemes.mpp = {
      type: "http",
      scheme: "Payment",
      description: `MPP (Machine Payments Protocol) credential, \`Authorization: Payment <credential>\`; intents ${names("mpp")}. Challenges come in the 402's WWW-Authenticate header.`,
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
