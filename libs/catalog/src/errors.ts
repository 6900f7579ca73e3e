import { TOP_UP_HINT } from "./credits.ts";

/**
 * Every error code the API answers with, and its HTTP status. The gateway, the
 * OpenAPI document and the README all read this table; services raise codes, never
 * statuses.
 *
 * `charged: true` marks the failures that are answers from the node (a revert, a
 * block or name the node looked up and did not find): the call was served, so it is
 * charged like a success, on every way to pay. Every other failure got no answer (or
 * never reached a node) and costs nothing.
 */
export const ERRORS = {
  invalid_parameter: {
    status: 400,
    description: "A path, query or body parameter is malformed; the message names it.",
  },
  unknown_parameter: { status: 400, description: "A parameter the endpoint does not take (often a typo)." },
  invalid_body: { status: 400, description: "The body is not a JSON object." },
  block_range_too_large: {
    status: 400,
    description: "A log query spans more blocks than the configured maximum.",
  },
  malformed_request: {
    status: 400,
    description:
      "The HTTP request itself is malformed (for example a header with control characters); nothing was read.",
  },
  invalid_api_key: {
    status: 401,
    description: "The Authorization header is missing, malformed, unknown or revoked.",
  },
  sign_in_invalid: {
    status: 401,
    description:
      "The SIGN-IN-WITH-X proof was refused: malformed, for another domain, outside its 5-minute window, not signed by its wallet, or used already (each proof is served once); the message says which. Sign a fresh one from a 402's `sign-in-with-x` extension.",
  },
  payment_required: {
    status: 402,
    description: "Pay per call with x402 (Payment-Signature) or MPP, or use an API key.",
  },
  payment_invalid: {
    status: 402,
    description: "The payment was refused; the message says why. Nothing was charged.",
  },
  no_account: {
    status: 402,
    description:
      "The signed-in wallet (SIGN-IN-WITH-X) has no account: buy credits with it (POST /api/credits) or sign in on the dashboard to get one; or pay per call (offers attached).",
  },
  insufficient_credits: {
    status: 402,
    description:
      "The account pays from prepaid credits and they do not cover this call: top up with POST /api/credits (nothing was charged).",
  },
  subscription_inactive: {
    status: 403,
    description: "The key's subscription is not active. Check it, or pay per call.",
  },
  not_found: { status: 404, description: "No such endpoint." },
  block_not_found: { status: 404, description: "The node does not know that block.", charged: true },
  ens_name_not_found: {
    status: 404,
    description: "The name has no address, or the address has no primary name.",
    charged: true,
  },
  transaction_not_found: {
    status: 404,
    description: "The node knows no transaction with that hash (or, for a receipt, it is not mined yet).",
    charged: true,
  },
  method_not_allowed: { status: 405, description: "The endpoint exists but not with this HTTP method." },
  payment_identifier_conflict: {
    status: 409,
    description:
      "The x402 payment identifier was used before by this payer with another payment or for another request. Nothing was charged; pay again with a new identifier.",
  },
  payment_identifier_in_progress: {
    status: 409,
    description:
      "The first request with this x402 payment identifier and payment is still being served. Nothing was charged; retry after Retry-After for its answer.",
  },
  request_timeout: { status: 408, description: "The request did not arrive in time; nothing was read." },
  payload_too_large: { status: 413, description: "The request body exceeds the limit." },
  unsupported_media_type: { status: 415, description: "POST bodies must be application/json." },
  execution_reverted: {
    status: 422,
    description: "The call or estimate reverted; `revert_data` and, when decodable, `reason` say why.",
    charged: true,
  },
  result_too_large: {
    status: 422,
    description:
      "The answer is too large (the node refused the query, or its answer is over the size cap); narrow the range or filter.",
  },
  headers_too_large: { status: 431, description: "The request headers exceed the server's limit." },
  internal_error: { status: 500, description: "An unexpected error in the service. Retry with backoff." },
  upstream_error: {
    status: 502,
    description: "The node answered with an error. Retry with backoff and jitter.",
  },
  upstream_disagreement: {
    status: 502,
    description:
      "The operator asks several nodes for this network's answer (a quorum read) and too few gave the same answer at the same block: no answer is served rather than one the nodes dispute. Nothing was charged; retry with backoff.",
  },
  upstream_unavailable: {
    status: 503,
    description: "No healthy node for the network. Retry with backoff and jitter.",
  },
  service_unavailable: {
    status: 503,
    description: "An internal service is unavailable. Retry with backoff and jitter.",
  },
  upstream_timeout: { status: 504, description: "The node did not answer in time. Retry with backoff." },
} as const satisfies Record<string, { status: number; description: string; charged?: true }>;

export type ErrorCode = keyof typeof ERRORS;

/** Whether a call that ended with `code` was answered by the node, and so is charged. */
export function isCharged(code: ErrorCode): boolean {
  return (ERRORS[code] as { charged?: true }).charged === true;
}

export function isErrorCode(code: string | undefined): code is ErrorCode {
  return code !== undefined && Object.hasOwn(ERRORS, code);
}

/**
 * The flat 429 codes of spec 7 (not enveloped). `payPerCall` names the accepted per-call payment
 * methods (the gateway reads them from payment-verifier, the one place they are known), e.g.
 * "x402 (exact) or MPP (charge, session)".
 */
export const LIMIT_ERRORS = {
  daily_limit_exceeded: (payPerCall: string) =>
    `The account's daily volume is spent. It resets at 00:00 UTC; or ${TOP_UP_HINT} and keep using this key${payPerCall ? `, or pay per call with ${payPerCall}` : ""}.`,
  monthly_limit_exceeded: (payPerCall: string) =>
    `The account's monthly volume is spent. It resets at 00:00 UTC on the 1st; or ${TOP_UP_HINT} and keep using this key${payPerCall ? `, or pay per call with ${payPerCall}` : ""}.`,
  rate_limited: (_payPerCall: string) =>
    "Too many requests in a burst. Back off briefly (Retry-After: 1) and retry.",
} as const;

export type LimitErrorCode = keyof typeof LIMIT_ERRORS;
