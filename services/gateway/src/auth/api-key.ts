// The API-key plan's auth (`Authorization: Bearer <key>`): quota-meter, or a unit of a lease this
// gateway holds for the key, decides whether the call is served; the call is counted against the
// account's windows and given back when the node gave no answer.
import { randomUUID } from "node:crypto";
import { ERRORS, TOP_UP_HINT } from "@tollgate/catalog";
import type { Logger } from "@tollgate/platform";
import type { QuotaMeterClient } from "../clients/quota-meter.ts";
import { type Reply, sendError, sendLimit } from "../envelope.ts";
import type { Grant, LeaseBook, UnknownKeyLimiter } from "../leases.ts";
import type { AcceptedMethods } from "../payment-methods.ts";
import type { UsageReporter } from "../usage-reporter.ts";
import { atomicPrice, refusedByPlan, sendOnAccount, setQuotaHeaders } from "./account-answer.ts";
import { type AuthMethod, type Caller, type CredentialsOf, charged, failureOf } from "./call.ts";

export interface ApiKeyAuthDeps {
  quota: QuotaMeterClient;
  leases: LeaseBook;
  /** Unknown API keys per client address; unset, not limited. */
  unknownKeys: UnknownKeyLimiter | undefined;
  usage: UsageReporter;
  /** Named in refusals: what else the caller could pay with. */
  methods: AcceptedMethods;
  logger: Logger;
}

/** The mesh's id of a batch's k-th unit (the first is the request's own id): what its refund is keyed by. */
function unitId(requestId: string, k: number): string {
  return k === 0 ? requestId : `${requestId}:${k}`;
}

/** Serves a call made with an API key. */
export function apiKeyAuth(deps: ApiKeyAuthDeps): AuthMethod<CredentialsOf<"api_key">, Caller, Reply> {
  return async (endpoint, network, credentials, execute, req, res) => {
    const { apiKey } = credentials;
    const started = performance.now();
    const receivedAt = new Date().toISOString();
    // A key this gateway does not hold costs its client a token of its unknown-key bucket (given back
    // below unless quota-meter calls the key unknown); an empty bucket is a 429, quota-meter not asked.
    const limiter = deps.leases.holds(apiKey) ? undefined : deps.unknownKeys;
    // Read only when needed: behind a proxy it walks X-Forwarded-For.
    const client = limiter ? (req.ip ?? "") : "";
    if (limiter && !limiter.take(client)) {
      sendLimit(res, "rate_limited", deps.methods.text());
      return;
    }
    let authz: Grant;
    const price = atomicPrice(endpoint);
    /** A unit (or, from credits, `price`) of the key's lease when this gateway holds one; quota-meter otherwise. */
    const grant = (price: number) =>
      deps.leases.grant(
        apiKey,
        (leaseUnits, close) => {
          const authorizationId = randomUUID();
          return deps.quota
            .authorize({
              requestId: res.locals.requestId,
              apiKey,
              endpoint: endpoint.path,
              network,
              leaseUnits,
              authorizationId,
              priceAtomic: price,
              ...(close ? { closeCreditLeaseId: close.leaseId, closeCreditsLeft: close.creditsLeft } : {}),
            })
            .catch((err: unknown) => {
              // Given up on (past the deadline, or the connection failed): quota-meter may still have
              // counted it, or count it yet. The call is answered 503, so whatever it counted goes back.
              deps.usage.release(authorizationId);
              throw err;
            });
        },
        price,
      );
    // A JSON-RPC batch counts one plan unit per call: the first grant's and these. From credits, the
    // first grant drew the whole batch's price.
    const more: Grant[] = [];
    /** Gives back what the batch took (it is not served): `status` is what the caller got. */
    const giveBackAll = (status: number) => {
      for (const [k, g] of more.entries()) report(g, unitId(res.locals.requestId, k + 1), status, false);
      more.length = 0;
    };
    let first: Grant | undefined;
    try {
      authz = await grant(price);
      first = authz;
      const units = endpoint.calls ?? 1;
      if (units > 1 && authz.decision === "DECISION_ALLOW" && authz.metered && !authz.credits) {
        for (let i = 1; i < units; i++) {
          // Never from credits: a plan that runs out within the batch refuses the batch.
          const unit = await grant(0);
          if (unit.decision !== "DECISION_ALLOW" || !unit.metered) {
            // Refused (429): the units taken for the batch go back, nothing served.
            report(authz, res.locals.requestId, 429, false);
            giveBackAll(429);
            authz = unit;
            break;
          }
          more.push(unit);
        }
      }
    } catch (err) {
      limiter?.giveBack(client);
      // quota-meter failed within a batch: what it took goes back.
      if (first?.metered) report(first, res.locals.requestId, 503, false);
      giveBackAll(503);
      const failure = failureOf(err);
      if (!failure.ok) deps.logger.warn({ code: failure.code }, "quota-meter unreachable");
      sendError(res, "service_unavailable", "the API-key service is unavailable, retry with backoff");
      return;
    }
    if (limiter && authz.decision !== "DECISION_INVALID_KEY") limiter.giveBack(client);
    if (refusedByPlan(res, authz, deps.methods)) return;
    switch (authz.decision) {
      case "DECISION_ALLOW":
        break;
      case "DECISION_NO_CREDITS":
        sendError(
          res,
          "insufficient_credits",
          `the account pays from prepaid credits and they do not cover this call (${endpoint.price} USDC): ${TOP_UP_HINT}`,
        );
        return;
      default:
        sendError(res, "invalid_api_key", "the API key is unknown or revoked");
        return;
    }
    setQuotaHeaders(res, authz);
    res.locals.principal = authz.accountId;
    const outcome = await execute();
    const status = outcome.ok ? 200 : ERRORS[outcome.code].status;
    sendOnAccount(res, endpoint, outcome, authz);
    const paid = charged(outcome);
    report(authz, res.locals.requestId, status, paid);
    for (const [k, unit] of more.entries()) report(unit, unitId(res.locals.requestId, k + 1), status, paid);

    /**
     * One unit's usage record. A call that got no answer is not charged: its unit goes back to its
     * lease when that is still live (served again at once), else to both windows.
     */
    function report(g: Grant, requestId: string, status: number, paid: boolean): void {
      const drawn = g.credits;
      const uncharged = g.metered && !paid;
      const returnedToLease = uncharged && deps.leases.giveBack(apiKey, g);
      deps.usage.add({
        requestId,
        accountId: g.accountId,
        keyId: g.keyId,
        endpoint: endpoint.path,
        network,
        status,
        latencyMs: performance.now() - started,
        time: receivedAt,
        refund: uncharged && !returnedToLease,
        returnedToLease,
        dayWindow: g.dayWindow,
        monthWindow: g.monthWindow,
        // A call whose price went back to its credit lease drew nothing; the lease is what quota-meter
        // counts a draw against (so a lease this gateway never returns is settled from its use).
        creditsDrawn: drawn && !returnedToLease ? drawn.drawn : 0,
        creditsEpoch: drawn?.epoch ?? "",
        creditLeaseId: drawn ? (g.leaseId ?? "") : "",
      });
    }
  };
}
