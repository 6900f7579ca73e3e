// The sentences both documents (OpenAPI, llms.txt) tell, written once so they say the same.
import { describePlan, moreThanFree, type Plans } from "@tollgate/catalog";

/**
 * The API-key plans in words, from the figures quota-meter states (DescribePlans), the same
 * wherever they are told (OpenAPI, llms.txt).
 */
export function plansText(plans: Plans, payPerCall: string): string {
  return `Standard plan (accounts the operator makes): ${describePlan(plans.standard)}; caps are raised per account on request. Free plan (the account a first sign-in on the dashboard creates): ${describePlan(plans.free)}. ${moreThanFree(payPerCall)}`;
}

/** The charging rule, the same words wherever it is told (OpenAPI, llms.txt, the README). */
export const CHARGING_RULE =
  "A call the node answered is charged, whatever its status: data, a revert (422 `execution_reverted`) or a not-found from a node lookup (404 `block_not_found`, `ens_name_not_found`); a charged answer carries its payment receipt and `meta.cost_usdc`, and counts against an API key's quota. Not charged: input refused before any node call (400), 401, 402, 403, 429, and failures with no answer (5xx, timeouts, 422 `result_too_large`).";

/**
 * x402's payment-identifier extension as Tollgate honours it, the same words in both documents
 * (the x402 security scheme and the 409 of every paid operation in OpenAPI, llms.txt).
 */
export const PAYMENT_IDENTIFIER_RULE =
  "Idempotent paid retries: the 402's `PAYMENT-REQUIRED` declares the x402 `payment-identifier` extension (optional). A payment whose `extensions[\"payment-identifier\"].info.id` is set (16-128 characters `A-Za-z0-9_-`; the official helper is `appendPaymentIdentifierToExtensions` of `@x402/extensions/payment-identifier`) and that is charged keeps its answer for the payment's validity window (`maxTimeoutSeconds`): the same `Payment-Signature` sent again for the same request (a retry after a lost answer) gets that first answer again (same status, body and `PAYMENT-RESPONSE`), with no second node call and no second charge. The same id with another payment or request: 409 `payment_identifier_conflict`; while the first request is still served: 409 `payment_identifier_in_progress` with `Retry-After: 1`. An uncharged call keeps nothing (its retry is served as a new call), nor does an answer over the size bound (64 KiB by default) or one past its window: its retry is refused as a used payment (402).";
