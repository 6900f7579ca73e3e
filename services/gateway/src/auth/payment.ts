// The pay-per-call auth (x402 `Payment-Signature`, MPP `Authorization: Payment`): payment-verifier
// verifies the payment, the node is called, and the payment is settled when the node answered or
// released when it did not ("no settlement, no data"). It also answers calls that carry no
// credentials (the 402 with every offer) and bodiless POSTs that carry a payment's own action.
import { createHash } from "node:crypto";
import { DEFAULT_NETWORK, type Endpoint, ERRORS, type ErrorCode } from "@tollgate/catalog";
import { CallError, grpc, type Logger, logSampler, prom, type Registry } from "@tollgate/platform";
import {
  PaymentError,
  type PaymentError__Output,
} from "@tollgate/platform/generated/tollgate/payment/v1/PaymentError";
import type { NextFunction, Request, Response } from "express";
import type { Header, PaymentVerifierClient, Resource } from "../clients/payment-verifier.ts";
import { dataJsonBody, errorBody, type Problem, sendAgain, sendError, sendLimit } from "../envelope.ts";
import { type AcceptedMethods, paymentRequiredMessage } from "../payment-methods.ts";
import { rawBodyOf } from "../raw-body.ts";
import { type AuthMethod, type CredentialsOf, charged, type Execute } from "./call.ts";
import { readCredentials } from "./credentials.ts";
import { microUsd, PayingClients } from "./paying-clients.ts";

export interface PaymentAuthDeps {
  payments: PaymentVerifierClient;
  methods: AcceptedMethods;
  logger: Logger;
  registry: Registry;
  publicBaseUrl: string | undefined;
  /** How long a settled payment lets its client's next paid call start its node call early (0: never). */
  earlyCallTrustMs: number;
}

/** What the paid path keeps across requests, made once per router. */
interface PaymentState extends PaymentAuthDeps {
  paying: PayingClients;
  /** Paid calls answered 503 because their Settle failed at the gRPC level (see settleOrRefuse). */
  settleUnanswered: prom.Counter;
  /** Whether to log a failed Verify now (see verifyUnavailable). */
  verifyFailureLine: () => number | undefined;
}

/**
 * The paid path's three entries: `serve` a call carrying a payment, `challenge` one carrying no
 * credentials, and `withoutService` a bodiless POST carrying a payment (see serveWithoutService).
 */
export function paymentAuth(deps: PaymentAuthDeps) {
  const state: PaymentState = {
    ...deps,
    paying: new PayingClients(
      deps.earlyCallTrustMs,
      new prom.Counter({
        name: "payment_early_calls_total",
        help: "Paid calls whose node call started beside Verify, before it answered (a settled payment's trust, docs/limits.md)",
        registers: [deps.registry],
      }),
    ),
    settleUnanswered: new prom.Counter({
      name: "payment_settle_unanswered_total",
      help: "Paid calls answered 503 because their Settle failed at the gRPC level: whether the payer was charged is in the ledger (docs/runbook.md)",
      registers: [deps.registry],
    }),
    verifyFailureLine: logSampler(1_000),
  };
  const serve: AuthMethod<CredentialsOf<"payment">> = (endpoint, network, credentials, execute, req, res) =>
    serveWithPayment(
      resourceOf(endpoint, network, state, req.path, req.query),
      credentials.headers,
      req.ip ?? "",
      execute,
      res,
      state,
      req.method === "POST" ? digestOf(rawBodyOf(req)) : "",
      microUsd(endpoint.price),
      endpoint.writes === true,
    );
  return {
    serve,
    /** No credentials: the 402 with every offer. */
    challenge: (endpoint: Endpoint, network: string, req: Request, res: Response): Promise<void> =>
      challenge(resourceOf(endpoint, network, state, req.path, req.query), res, state),
    withoutService: (
      endpoint: Endpoint,
      req: Request,
      res: Response,
      otherwise: NextFunction | (() => void),
    ): Promise<void> => serveWithoutService(endpoint, req, res, state, otherwise),
    /** No credentials, for a resource a route built itself (a top-up): the 402 with its offers. */
    challengeFor: (resource: Resource, res: Response, message: string): Promise<void> =>
      challenge(resource, res, state, "", message),
    /**
     * A payment for something other than a node call (a top-up, routes/credits.ts): Verify, then
     * Settle at once. A refusal or an outage is answered here (undefined); a settled payment comes
     * back with its receipt headers copied, and the caller answers.
     */
    buy: (
      resource: Resource,
      credentials: Header[],
      req: Request,
      res: Response,
    ): Promise<{ verified: Verified; settled: Settled } | undefined> =>
      buy(resource, credentials, req.ip ?? "", res, state),
  };
}

async function buy(
  resource: Resource,
  credentials: Header[],
  client: string,
  res: Response,
  deps: PaymentState,
): Promise<{ verified: Verified; settled: Settled } | undefined> {
  let verified: Verified;
  try {
    verified = await deps.payments.verify(res.locals.requestId, resource, credentials, client);
  } catch (err) {
    verifyUnavailable(err, res, deps);
    return undefined;
  }
  res.locals.auth = verified.scheme || "payment";
  res.locals.principal = verified.payer;
  if (!verified.valid) {
    refusePayment(verified, res, deps);
    return undefined;
  }
  const settled = await settleOrRefuse(resource, credentials, verified.paymentId, res, deps);
  return settled ? { verified, settled } : undefined;
}

/**
 * The paid resource; its URL is under PUBLIC_BASE_URL, never built from the caller's Host header,
 * and never the raw request target either: that may carry up to the 16 KB header limit of what
 * validation never sees (empty pairs; any parameter of a no-service payment, which is not
 * validated), which the 402 would echo base64'd into PAYMENT-REQUIRED, past the 16 KB of response
 * headers HTTP clients read (Node's fetch fails).
 * The URL is the validated path and query (strict schemas, so bounded by their formats), the
 * query re-encoded.
 */
export function resourceOf(
  endpoint: Endpoint,
  network: string,
  deps: { publicBaseUrl: string | undefined },
  path: string,
  query: Record<string, unknown>,
): Resource {
  const known = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (typeof value === "string") known.append(name, value);
  const search = known.size > 0 ? `?${known}` : "";
  // A JSON-RPC body is priced by its own name (its methods), the rest by their path template.
  return {
    endpoint: endpoint.resource ?? endpoint.path,
    network,
    url: `${deps.publicBaseUrl ?? ""}${path}${search}`,
  };
}

/**
 * What a paid POST asks besides its URL, for a payment identifier's retry to match (the proto's
 * request_digest): the SHA-256 of its body's exact bytes, every POST's (a JSON-RPC body too, which
 * its resource name only counts the methods of); empty without a body.
 */
function digestOf(body: Buffer | undefined): string {
  return body === undefined ? "" : createHash("sha256").update(body).digest("hex");
}

/** Appends, never overwrites: several MPP challenges share WWW-Authenticate. */
export function copyHeaders(res: Response, headers: { name: string; value: string }[]): void {
  for (const h of headers) res.append(h.name, h.value);
}

/**
 * payment-verifier names why; an outage is a 503 to retry, a payment identifier's conflict or a
 * first request still served a 409, anything else a 402.
 */
function paymentErrorCode(error: PaymentError__Output): ErrorCode {
  if (error === "PAYMENT_ERROR_SERVICE_UNAVAILABLE") return "service_unavailable";
  if (error === "PAYMENT_ERROR_IDENTIFIER_CONFLICT") return "payment_identifier_conflict";
  if (error === "PAYMENT_ERROR_IDENTIFIER_IN_PROGRESS") return "payment_identifier_in_progress";
  return error === "PAYMENT_ERROR_PAYMENT_REQUIRED" ? "payment_required" : "payment_invalid";
}

/**
 * Why payment-verifier refused a payment (Verify) or did not settle it (Settle). A payment-verifier
 * of the last release fills only the deprecated `error_code` string, which names the same value in
 * lower case: read that way while a rolling upgrade mixes releases. Drop with `error_code`.
 */
export function refusalOf(answer: { error: PaymentError__Output; errorCode: string }): PaymentError__Output {
  if (answer.error !== PaymentError.PAYMENT_ERROR_UNSPECIFIED || !answer.errorCode) return answer.error;
  const named = `PAYMENT_ERROR_${answer.errorCode.toUpperCase()}`;
  return Object.hasOwn(PaymentError, named)
    ? PaymentError[named as keyof typeof PaymentError]
    : PaymentError.PAYMENT_ERROR_UNSPECIFIED;
}

async function challenge(
  resource: Resource,
  res: Response,
  deps: PaymentState,
  error = "",
  /** The 402's message, when it is not the per-call one. */
  text?: string,
): Promise<void> {
  let problem: Problem | null = null;
  try {
    const offer = await deps.payments.challenge(res.locals.requestId, resource, error);
    copyHeaders(res, offer.headers);
    problem = offer.problem;
  } catch (err) {
    deps.logger.error({ err }, "payment-verifier unreachable while building a challenge");
    // A 402 without offers would break every paying client (nothing to sign); when the gateway
    // takes per-call payments, an outage of the offers is a 503 to retry. With none accepted,
    // the 402 (send an API key) needs no offer.
    if (deps.methods.list().length > 0) {
      sendError(
        res,
        "service_unavailable",
        "payment offers are unavailable right now: retry with backoff, or send Authorization: Bearer <API key>",
      );
      return;
    }
  }
  const message = text ?? paymentRequiredMessage(deps.methods.text());
  sendError(
    res,
    "payment_required",
    message,
    undefined,
    undefined,
    problem && { ...problem, detail: message },
  );
}

type Verified = Awaited<ReturnType<PaymentVerifierClient["verify"]>>;

/** A refused payment: 429 for the attempt limits, else 402 (503 for an outage) with fresh offers. */
function refusePayment(verified: Verified, res: Response, deps: PaymentState): void {
  const error = refusalOf(verified);
  if (error === "PAYMENT_ERROR_RATE_LIMITED") {
    sendLimit(res, "rate_limited", deps.methods.text());
    return;
  }
  // The first request with this payment identifier is still being served: its answer is kept soon.
  if (error === "PAYMENT_ERROR_IDENTIFIER_IN_PROGRESS") res.setHeader("Retry-After", "1");
  copyHeaders(res, verified.headers);
  sendError(
    res,
    paymentErrorCode(error),
    verified.reason || "the payment was refused",
    undefined,
    undefined,
    verified.problem,
  );
}

/**
 * A Verify that failed at the gRPC level (payment-verifier unreachable, over the deadline, or
 * failing): 503, nothing reserved for the call. Logged with its code, once a second at most (an
 * outage fails every paid call), so the cause of a 503 is on record.
 */
function verifyUnavailable(err: unknown, res: Response, deps: PaymentState): void {
  if (!(err instanceof CallError)) throw err;
  const { failure } = err;
  const skipped = deps.verifyFailureLine();
  if (skipped !== undefined) {
    deps.logger.error(
      {
        err: failure.message,
        code: grpc.status[failure.grpcCode],
        requestId: res.locals.requestId,
        since_last_line: skipped,
      },
      "payment verification call failed: the paid call is answered 503",
    );
  }
  sendError(res, "service_unavailable", "payment verification is unavailable, retry with backoff");
}

type Settled = Awaited<ReturnType<PaymentVerifierClient["settle"]>>;

/** Settle failures before any settlement could begin: a refused mesh token, a malformed request. */
const STARTED_NOTHING = new Set(["UNAUTHENTICATED", "PERMISSION_DENIED", "INVALID_ARGUMENT"]);

/**
 * Settles a verified payment and copies its headers; a failed or unreachable settlement is
 * answered here (undefined returned): "no settlement, no data".
 */
async function settleOrRefuse(
  resource: Resource,
  credentials: Header[],
  paymentId: string,
  res: Response,
  deps: PaymentState,
): Promise<Settled | undefined> {
  let settled: Settled;
  try {
    settled = await deps.payments.settle(res.locals.requestId, paymentId, resource, credentials);
  } catch (err) {
    if (!(err instanceof CallError)) throw err;
    const { failure } = err;
    const code = grpc.status[failure.grpcCode];
    // Failed at the gRPC level (every attempt's replica gone, the deadline passed, a failure in
    // payment-verifier): the client gets a 503 and no data, but a settlement that began may have
    // collected, or still collect (payment-verifier counts and logs a late one); the ledger tells.
    // A refused mesh token or a malformed request started nothing.
    if (!STARTED_NOTHING.has(code ?? "")) {
      deps.settleUnanswered.inc();
      deps.logger.error(
        { err: failure.message, code, requestId: res.locals.requestId, payer: res.locals.principal },
        "payment settlement call failed: the call is answered 503; had its settlement collected, the ledger's row for this request id shows a payer charged for no data",
      );
    }
    sendError(res, "service_unavailable", "payment settlement is unavailable, retry with backoff");
    return undefined;
  }
  copyHeaders(res, settled.headers);
  if (!settled.settled) {
    const reason = settled.reason || "the payment could not be settled";
    sendError(res, paymentErrorCode(refusalOf(settled)), reason, undefined, undefined, settled.problem);
    return undefined;
  }
  return settled;
}

/**
 * A payment that needs no upstream call (payment-verifier says so: a channel management action,
 * e.g. an MPP session close or top-up): settled at once, answered 204 with its receipt headers.
 */
async function settleWithoutService(
  resource: Resource,
  credentials: Header[],
  paymentId: string,
  res: Response,
  deps: PaymentState,
): Promise<void> {
  if (await settleOrRefuse(resource, credentials, paymentId, res, deps)) res.status(204).end();
}

/**
 * A bodiless POST carrying a payment to a paid route (see asksNoService): payment-verifier decides
 * whether the payment needs no service. If it is for a call instead ("not_applicable"), nothing was
 * reserved and the request gets its ordinary answer (`otherwise`: 405 on a GET route, the body
 * check on a POST route).
 */
async function serveWithoutService(
  endpoint: Endpoint,
  req: Request,
  res: Response,
  deps: PaymentState,
  otherwise: NextFunction | (() => void),
): Promise<void> {
  const credentials = readCredentials(req);
  if (credentials.kind !== "payment") return void otherwise();
  res.locals.endpoint = endpoint.path;
  res.setHeader("Cache-Control", "no-store");
  const asked = req.query.network;
  const network =
    typeof asked === "string" && (endpoint.networks as readonly string[]).includes(asked)
      ? asked
      : DEFAULT_NETWORK;
  // Nothing here was validated: the path is the route's own only when its parameters pass their
  // formats (else the template), the query only the network chosen above.
  const pathOk = endpoint.params.path?.safeParse(req.params).success ?? true;
  const resource = resourceOf(
    endpoint,
    network,
    deps,
    pathOk ? req.path : endpoint.path,
    asked === network ? { network } : {},
  );
  let verified: Verified;
  try {
    verified = await deps.payments.verify(
      res.locals.requestId,
      resource,
      credentials.headers,
      req.ip ?? "",
      true,
    );
  } catch (err) {
    return verifyUnavailable(err, res, deps);
  }
  if (!verified.valid && refusalOf(verified) === "PAYMENT_ERROR_NOT_APPLICABLE") return void otherwise();
  res.locals.auth = verified.scheme || "payment";
  res.locals.principal = verified.payer;
  if (!verified.valid) return refusePayment(verified, res, deps);
  return settleWithoutService(resource, credentials.headers, verified.paymentId, res, deps);
}

async function serveWithPayment(
  resource: Resource,
  credentials: Header[],
  client: string,
  execute: Execute,
  res: Response,
  deps: PaymentState,
  digest: string,
  /** The call's price, micro-USD: what its settled payment is worth. */
  priceMicro: number,
  /** The call changes the chain (see Endpoint.writes). */
  writes: boolean,
): Promise<void> {
  const requestId = res.locals.requestId;
  // A client whose last payment settled gets the node call of one paid call at a time started
  // beside Verify, when that call is priced at most what the settled payment paid: the call's
  // latency then hides Verify's. Nothing is served, settled or released on it before Verify says
  // valid; when Verify refuses, its answer is dropped. Never for a call that writes (a broadcast
  // transaction cannot be dropped): a refused payment leaves the node unchanged. Its other calls
  // wait for Verify, so a burst of forged payments after a genuine one costs at most this one
  // upstream request, worth at most what was genuinely paid (docs/limits.md).
  const trust = writes ? undefined : deps.paying.claim(client, priceMicro);
  const early = trust ? execute() : undefined;
  early?.catch(() => undefined); // awaited below, unless Verify refuses
  let verified: Awaited<ReturnType<PaymentVerifierClient["verify"]>>;
  try {
    verified = await deps.payments.verify(requestId, resource, credentials, client, false, digest);
  } catch (err) {
    if (trust) trust.pending = false;
    return verifyUnavailable(err, res, deps);
  }
  if (trust) trust.pending = false;
  // A payment carrying a payment identifier ends its client's early-call trust (and earns none
  // when settled): a retry of it must start no node call beside its Verify, which answers it
  // from the first answer (below), or 409.
  if (!verified.valid || verified.answerMaxBytes > 0) deps.paying.refused(client);
  // A payment identifier's retry of a request answered before: that answer again, as it was.
  const again = verified.answer;
  if (!verified.valid && again) {
    res.locals.auth = verified.scheme || "payment";
    copyHeaders(res, again.headers);
    return sendAgain(res, again.status, again.body);
  }
  res.locals.auth = verified.scheme || "payment";
  res.locals.principal = verified.payer;
  if (!verified.valid) return refusePayment(verified, res, deps);
  // A management action sent with a call (e.g. a session close on a GET): it is not a payment for
  // the call, so the node is not called (or its early answer is dropped).
  if (verified.noService) return settleWithoutService(resource, credentials, verified.paymentId, res, deps);
  const outcome = await (early ?? execute());
  if (!charged(outcome)) {
    // No answer from the node, so nothing is charged: free the payment so it can be used again.
    deps.payments
      .release(requestId, verified.paymentId, outcome.ok ? "" : outcome.code, resource, credentials)
      .catch((err: unknown) => {
        deps.logger.warn({ err }, "payment release failed");
      });
    if (!outcome.ok) sendError(res, outcome.code, outcome.message, outcome.extra);
    return;
  }
  // The node answered; the x402 rule: no settlement, no data (a revert's data included).
  const settled = await settleOrRefuse(resource, credentials, verified.paymentId, res, deps);
  if (!settled) return;
  if (verified.answerMaxBytes === 0) deps.paying.settled(client, priceMicro);
  const paid = {
    cost_usdc: settled.meta?.costUsdc ?? "",
    payment_chain: settled.meta?.paymentChain ?? "",
    payment_token: settled.meta?.paymentToken ?? "",
  };
  const body = outcome.ok
    ? dataJsonBody(res, outcome.dataJson, paid)
    : errorBody(res, outcome.code, outcome.message, outcome.extra, paid);
  const status = outcome.ok ? 200 : ERRORS[outcome.code].status;
  sendAgain(res, status, body);
  if (verified.answerMaxBytes > 0) {
    const answer = { status, headers: settled.headers, body };
    keepAnswer(
      res.locals.requestId,
      resource,
      credentials,
      verified.paymentId,
      answer,
      verified.answerMaxBytes,
      deps,
    );
  }
}

/**
 * Hands the answer of a settled payment that carries a payment identifier to payment-verifier, after
 * it was sent (off the client's path), so a retry of the payment gets it again: the body only when
 * it is within the bound Verify named (answer_max_bytes). Lost, a retry is told "in progress"
 * until the claim lapses, then answered as a used payment.
 */
function keepAnswer(
  requestId: string,
  resource: Resource,
  credentials: Header[],
  paymentId: string,
  answer: { status: number; headers: Header[]; body: string },
  maxBytes: number,
  deps: PaymentState,
): void {
  const tooLarge = Buffer.byteLength(answer.body) > maxBytes;
  const kept = tooLarge ? { ...answer, body: "" } : answer;
  deps.payments
    .keepAnswer(requestId, paymentId, resource, credentials, kept, tooLarge)
    .catch((err: unknown) => {
      deps.logger.warn(
        { err, requestId },
        "could not hand a paid answer to payment-verifier for its retries",
      );
    });
}
