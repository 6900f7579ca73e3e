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
import { atomicPrice, refusedByPlan, sendOnAccount, setQuotaHeaders, unitId } from "./account-answer.ts";
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
    // A JSON-RPC batch counts one plan unit per call, all in one step or none (quota-meter's, or
    // the lease's); from credits, its whole price. Refused, it took nothing.
    const calls = endpoint.calls ?? 1;
    try {
      // A unit (a batch's units, or from credits its price) of the key's lease when this gateway
      // holds one; quota-meter otherwise.
      authz = await deps.leases.grant(
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
              calls,
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
        calls,
      );
    } catch (err) {
      limiter?.giveBack(client);
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
    const drawn = authz.credits;
    const uncharged = authz.metered && !paid;
    // A call that got no answer is not charged: its units (or price) go back to its lease when that
    // is still live (served again at once), else to both windows (or the credits).
    const returnedToLease = uncharged && deps.leases.giveBack(apiKey, authz);
    // One usage record per plan unit (each refunded once by its own id); one for a credit draw.
    const units = authz.metered && !drawn ? calls : 1;
    for (let k = 0; k < units; k++) {
      deps.usage.add({
        requestId: unitId(res.locals.requestId, k),
        accountId: authz.accountId,
        keyId: authz.keyId,
        endpoint: endpoint.path,
        network,
        status,
        latencyMs: performance.now() - started,
        time: receivedAt,
        refund: uncharged && !returnedToLease,
        returnedToLease,
        dayWindow: authz.dayWindow,
        monthWindow: authz.monthWindow,
        // A call whose price went back to its credit lease drew nothing; the lease is what quota-meter
        // counts a draw against (so a lease this gateway never returns is settled from its use).
        creditsDrawn: drawn && !returnedToLease ? drawn.drawn : 0,
        creditsEpoch: drawn?.epoch ?? "",
        creditLeaseId: drawn ? (authz.leaseId ?? "") : "",
      });
    }
  };
}
