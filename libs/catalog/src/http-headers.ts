/**
 * The public API's own headers, each written once:
 * the gateway sets them, CORS exposes them and OpenAPI documents them from here.
 */

export const QUOTA_HEADERS = {
  dayLimit: { name: "X-Quota-Day-Limit", description: "Requests allowed in the current UTC day." },
  dayUsed: { name: "X-Quota-Day-Used", description: "Requests used today, including this one." },
  monthLimit: { name: "X-Quota-Month-Limit", description: "Requests allowed in the current calendar month." },
  monthUsed: { name: "X-Quota-Month-Used", description: "Requests used this month, including this one." },
} as const;

export const CREDIT_HEADERS = {
  remaining: {
    name: "X-Credits-Remaining",
    description: "On a call paid from prepaid credits: the account's balance after it, in USDC (decimal).",
  },
} as const;

export const PAYMENT_HEADERS = {
  /** x402 v2 offers on a 402 (server → client). */
  required: { name: "PAYMENT-REQUIRED", description: "x402 v2 PaymentRequired, base64 JSON." },
  /** x402 v2 settlement receipt on success (server → client). */
  response: { name: "PAYMENT-RESPONSE", description: "x402 v2 SettleResponse, base64 JSON." },
  /** x402 v2 payment (client → server); X-Payment is the v1 name. */
  signature: { name: "Payment-Signature", description: "x402 v2 PaymentPayload, base64 JSON." },
  signatureV1: { name: "X-Payment", description: "x402 v1 name of the payment header." },
  /** MPP challenge and receipt. */
  mppChallenge: { name: "WWW-Authenticate", description: "MPP `Payment` challenges on a 402." },
  mppReceipt: { name: "Payment-Receipt", description: "MPP receipt on success." },
} as const;

/**
 * x402's `sign-in-with-x` extension (client → server): a wallet's signed CAIP-122 proof, made from
 * the challenge a 402's PAYMENT-REQUIRED carries; the call is served on the wallet's account.
 */
export const SIGN_IN_HEADER = {
  name: "SIGN-IN-WITH-X",
  description:
    "x402 sign-in-with-x proof, base64 JSON (a wallet's signed EIP-4361 message from the 402's `sign-in-with-x` extension); single-use, valid 5 minutes.",
} as const;

export const REQUEST_ID_HEADER = "X-Request-Id";
