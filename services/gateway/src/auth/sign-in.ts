// x402 sign-in-with-x (`SIGN-IN-WITH-X: <proof>`): payment-verifier checks the proof (its domain,
// time window, signature and single use are chain logic, and the replay state is its), then
// quota-meter serves the call on the account bound to the wallet, as it serves an API key's: its
// plan's windows, then its credits. No key and no per-call payment; a call that got no answer from
// the node is given back (its unit, or the credits it drew). The gateway only reads the decisions.
import { randomUUID } from "node:crypto";
import { ERRORS, type ErrorCode, TOP_UP_HINT } from "@tollgate/catalog";
import { CallError, grpc, type Logger, logSampler } from "@tollgate/platform";
import type { Response } from "express";
import type { PaymentVerifierClient } from "../clients/payment-verifier.ts";
import type { Authorization, QuotaMeterClient } from "../clients/quota-meter.ts";
import { sendError, sendLimit } from "../envelope.ts";
import type { AcceptedMethods } from "../payment-methods.ts";
import type { UsageReporter } from "../usage-reporter.ts";
import { atomicPrice, refusedByPlan, sendOnAccount, setQuotaHeaders, unitId } from "./account-answer.ts";
import { type AuthMethod, type CredentialsOf, charged, failureOf } from "./call.ts";
import { copyHeaders, resourceOf } from "./payment.ts";

export interface SignInAuthDeps {
  payments: PaymentVerifierClient;
  quota: QuotaMeterClient;
  usage: UsageReporter;
  /** Named in refusals: what else the caller could pay with. */
  methods: AcceptedMethods;
  logger: Logger;
  /** The origin proofs are bound to, and the 402's resource URLs (never the caller's Host). */
  publicBaseUrl: string | undefined;
}

/** Serves a call made with a sign-in-with-x proof. */
export function signInAuth(deps: SignInAuthDeps): AuthMethod<CredentialsOf<"sign_in">> {
  const failureLine = logSampler(1_000);
  return async (endpoint, network, credentials, execute, req, res) => {
    const started = performance.now();
    const receivedAt = new Date().toISOString();
    const requestId = res.locals.requestId;
    const resource = resourceOf(endpoint, network, deps, req.path, req.query);
    let signedIn: Awaited<ReturnType<PaymentVerifierClient["verifySignIn"]>>;
    try {
      signedIn = await deps.payments.verifySignIn(requestId, resource, credentials.proof, req.ip ?? "");
    } catch (err) {
      if (!(err instanceof CallError)) throw err;
      if (failureLine() !== undefined) {
        deps.logger.error(
          { err: err.failure.message, code: grpc.status[err.failure.grpcCode], requestId },
          "sign-in verification call failed: the call is answered 503",
        );
      }
      sendError(res, "service_unavailable", "sign-in verification is unavailable, retry with backoff");
      return;
    }
    if (!signedIn.valid) {
      switch (signedIn.error) {
        case "SIGN_IN_ERROR_RATE_LIMITED":
          sendLimit(res, "rate_limited", deps.methods.text());
          return;
        case "SIGN_IN_ERROR_SERVICE_UNAVAILABLE":
          sendError(res, "service_unavailable", `${signedIn.reason}: retry with a fresh proof`);
          return;
        default:
          sendError(res, "sign_in_invalid", `the SIGN-IN-WITH-X proof was refused: ${signedIn.reason}`, {
            reason_code: signedIn.code,
          });
          return;
      }
    }
    const wallet = signedIn.wallet;
    res.locals.principal = wallet;
    const authorizationId = randomUUID();
    // A JSON-RPC batch: one plan unit per call, all counted in this Authorize or none (from
    // credits, its whole price). No lease: the units granted are exactly the calls.
    const calls = endpoint.calls ?? 1;
    let authz: Authorization;
    try {
      authz = await deps.quota.authorize({
        requestId,
        wallet,
        priceAtomic: atomicPrice(endpoint),
        endpoint: endpoint.path,
        network,
        leaseUnits: calls,
        calls,
        authorizationId,
      });
    } catch (err) {
      // Given up on: whatever quota-meter counted or drew for it goes back with the next usage batch.
      deps.usage.release(authorizationId);
      const failure = failureOf(err);
      if (!failure.ok) deps.logger.warn({ code: failure.code }, "quota-meter unreachable");
      sendError(res, "service_unavailable", "the account service is unavailable, retry with backoff");
      return;
    }
    if (refusedByPlan(res, authz, deps.methods)) return;
    switch (authz.decision) {
      case "DECISION_ALLOW":
        break;
      case "DECISION_NO_CREDITS":
        return refuseWithOffers(
          res,
          deps,
          "insufficient_credits",
          `the account of ${wallet} pays from prepaid credits and they do not cover this call (${endpoint.price} USDC): ${TOP_UP_HINT}${payInstead(deps)}`,
          resource,
        );
      default:
        // DECISION_NO_ACCOUNT (or a quota-meter that knows no wallets: it finds no key either).
        return refuseWithOffers(
          res,
          deps,
          "no_account",
          `${wallet} has no account here: sign in on the dashboard with it to get one, or ${TOP_UP_HINT} from it${payInstead(deps)}`,
          resource,
        );
    }
    setQuotaHeaders(res, authz, authz.metered && !authz.credits ? calls - 1 : 0);
    const outcome = await execute();
    const status = outcome.ok ? 200 : ERRORS[outcome.code].status;
    sendOnAccount(res, endpoint, outcome, authz);
    // A call that got no answer is not charged: its units (or the credits it drew) go back, one
    // usage record per plan unit (each refunded once by its own id), one for a credit draw.
    const units = authz.metered && !authz.credits ? calls : 1;
    for (let k = 0; k < units; k++) {
      deps.usage.add({
        requestId: unitId(requestId, k),
        accountId: authz.accountId,
        keyId: authz.keyId,
        endpoint: endpoint.path,
        network,
        status,
        latencyMs: performance.now() - started,
        time: receivedAt,
        refund: authz.metered && !charged(outcome),
        returnedToLease: false,
        dayWindow: authz.dayWindow,
        monthWindow: authz.monthWindow,
        creditsDrawn: authz.credits?.drawn ?? 0,
        creditsEpoch: authz.credits?.epoch ?? "",
        // One call's credit lease (quota-meter counts the draw against it).
        creditLeaseId: authz.credits ? authorizationId : "",
      });
    }
  };
}

function payInstead(deps: SignInAuthDeps): string {
  const text = deps.methods.text();
  return text ? `; or pay per call with ${text} (the offers are in this answer's headers)` : "";
}

/**
 * A 402 for a signed-in wallet the account cannot serve, with the offers of a 402 without
 * credentials attached: the official clients pay per call from them (@x402/fetch does when its
 * sign-in answer is a 402). No offers (payment-verifier unreachable) leaves the refusal standing.
 */
async function refuseWithOffers(
  res: Response,
  deps: SignInAuthDeps,
  code: Extract<ErrorCode, "no_account" | "insufficient_credits">,
  message: string,
  resource: ReturnType<typeof resourceOf>,
): Promise<void> {
  try {
    const offer = await deps.payments.challenge(res.locals.requestId, resource, code);
    copyHeaders(res, offer.headers);
  } catch {
    // The refusal does not depend on the offers.
  }
  sendError(res, code, message);
}
