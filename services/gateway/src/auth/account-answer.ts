// How a call served on an account is answered, whoever asked for it (an API key, a signed-in
// wallet): the X-Quota-* values of its plan's windows; and when it drew prepaid credits, the
// balance after it (X-Credits-Remaining) and its price in meta.cost_usdc, as a paid call's.
import { CREDIT_HEADERS, type Endpoint, priceAtomic, QUOTA_HEADERS, usdcOfAtomic } from "@tollgate/catalog";
import type { Authorization } from "../clients/quota-meter.ts";
import { type Reply, sendDataJson, sendError, sendLimit } from "../envelope.ts";
import { type AcceptedMethods, inactiveMessage } from "../payment-methods.ts";
import { charged, type Outcome } from "./call.ts";

/**
 * The X-Quota-* values of the call; `after`: units it counted after the one `authz.quota` shows
 * (a JSON-RPC batch served by one Authorize shows its last call's).
 */
export function setQuotaHeaders(res: Reply, authz: Pick<Authorization, "quota">, after = 0): void {
  const q = authz.quota;
  if (!q) return;
  if (q.dayLimit != null && q.dayUsed != null) {
    res.setHeader(QUOTA_HEADERS.dayLimit.name, String(q.dayLimit));
    res.setHeader(QUOTA_HEADERS.dayUsed.name, String(q.dayUsed + after));
  }
  if (q.monthLimit != null && q.monthUsed != null) {
    res.setHeader(QUOTA_HEADERS.monthLimit.name, String(q.monthLimit));
    res.setHeader(QUOTA_HEADERS.monthUsed.name, String(q.monthUsed + after));
  }
}

/** The mesh's id of a batch's k-th unit (the first is the request's own id): what its refund is keyed by. */
export function unitId(requestId: string, k: number): string {
  return k === 0 ? requestId : `${requestId}:${k}`;
}

/**
 * The refusals a key and a signed-in wallet share: an account not active (403), a spent window or
 * the burst guard (429, flat, with the X-Quota-* values). False for any other decision.
 */
export function refusedByPlan(
  res: Reply,
  authz: Pick<Authorization, "decision" | "quota">,
  methods: AcceptedMethods,
): boolean {
  switch (authz.decision) {
    case "DECISION_SUBSCRIPTION_INACTIVE":
      sendError(res, "subscription_inactive", inactiveMessage(methods.text()));
      return true;
    case "DECISION_DAILY_LIMIT_EXCEEDED":
      setQuotaHeaders(res, authz);
      sendLimit(res, "daily_limit_exceeded", methods.text());
      return true;
    case "DECISION_MONTHLY_LIMIT_EXCEEDED":
      setQuotaHeaders(res, authz);
      sendLimit(res, "monthly_limit_exceeded", methods.text());
      return true;
    case "DECISION_RATE_LIMITED":
      setQuotaHeaders(res, authz);
      sendLimit(res, "rate_limited", methods.text());
      return true;
    default:
      return false;
  }
}

/** Sends the node's outcome; the quota headers are set before the call (refusals carry them too). */
export function sendOnAccount(
  res: Reply,
  endpoint: Endpoint,
  outcome: Outcome,
  authz: Pick<Authorization, "credits">,
): void {
  const drawn = authz.credits;
  if (drawn) {
    // Paid from credits: charged like a paid call (its price in meta), and the balance after it.
    // A call the node did not answer gets its credits back (the usage report): the balance before it.
    const paid = charged(outcome);
    res.setHeader(
      CREDIT_HEADERS.remaining.name,
      usdcOfAtomic(paid ? drawn.remaining : drawn.remaining + drawn.drawn),
    );
    const cost = paid ? { cost_usdc: endpoint.price } : undefined;
    if (outcome.ok) sendDataJson(res, outcome.dataJson, cost);
    else sendError(res, outcome.code, outcome.message, outcome.extra, cost);
  } else if (outcome.ok) sendDataJson(res, outcome.dataJson);
  else sendError(res, outcome.code, outcome.message, outcome.extra);
}

/** Each endpoint's price in USDC atomic units (what a call paid from credits draws), worked out once. */
const atomicPrices = new WeakMap<Endpoint, number>();
export function atomicPrice(endpoint: Endpoint): number {
  let p = atomicPrices.get(endpoint);
  if (p === undefined) {
    p = Number(priceAtomic(endpoint.price));
    atomicPrices.set(endpoint, p);
  }
  return p;
}
