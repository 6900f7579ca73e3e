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
