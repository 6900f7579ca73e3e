import { randomUUID } from "node:crypto";
import {
  DEFAULT_NETWORK,
  ENDPOINTS,
  type Endpoint,
  ERRORS,
  type ErrorCode,
  isCharged,
  QUOTA_HEADERS,
  validateRequest,
} from "@tollgate/catalog";
import { CallError, grpc, type Logger, logSampler, prom, type Registry } from "@tollgate/platform";
import { type NextFunction, type Request, type Response, Router } from "express";
import type { Header, PaymentVerifierClient, Resource } from "../clients/payment-verifier.ts";
import type { QuotaMeterClient } from "../clients/quota-meter.ts";
import type { RpcProxyClient } from "../clients/rpc-proxy.ts";
import { type Credentials, readCredentials } from "../credentials.ts";
import { type Problem, sendData, sendError, sendLimit } from "../envelope.ts";
import type { Grant, LeaseBook, UnknownKeyLimiter } from "../leases.ts";
import { type AcceptedMethods, inactiveMessage, paymentRequiredMessage } from "../payment-methods.ts";
import { publicError } from "../upstream-errors.ts";
import type { UsageReporter } from "../usage-reporter.ts";

export interface ChainDeps {
  rpc: RpcProxyClient;
  quota: QuotaMeterClient;
  payments: PaymentVerifierClient;
  methods: AcceptedMethods;
  leases: LeaseBook;
  /** Unknown API keys per client address; unset, not limited. */
  unknownKeys: UnknownKeyLimiter | undefined;
  usage: UsageReporter;
  logger: Logger;
  registry: Registry;
  publicBaseUrl: string | undefined;
  /** How long a settled payment lets its client's next paid call start its node call early (0: never). */
  earlyCallTrustMs: number;
}

type Outcome =
  | { ok: true; data: unknown }
  | { ok: false; code: ErrorCode; message: string; extra?: Record<string, unknown> };

/** The charging rule, for every way to pay: the node answered (data, a revert, a not-found). */
function charged(outcome: Outcome): boolean {
  return outcome.ok || isCharged(outcome.code);
}

function failureOf(err: unknown): Outcome {
  if (err instanceof CallError) return { ok: false, ...publicError(err.failure) };
  throw err;
}

/** The most clients remembered; past it the least recently paid is forgotten. */
const PAYING_MAX = 10_000;

/** One paying client's standing (see PayingClients). */
interface Trust {
  /** Until when (Date.now ms) its paid calls may start their node call early; 0 once one was refused. */
  until: number;
  /** An early node call has started whose payment Verify has not answered yet. */
  pending: boolean;
}

/**
 * Client addresses whose last payment settled (within the trust time). One paid call of theirs at a
 * time starts its node call while Verify runs (see serveWithPayment); their other calls, and anyone
 * else's, wait for Verify. Trust is earned only by a settled payment: a payment that verifies and
 * is then released (the node gave no answer, or rpc-proxy refused the input) renews nothing, so a
 * reusable authorization cannot keep a client trusted, and a refused Verify ends it. So forged or
 * unpaid payments cost at most one upstream request per settled payment.
 */
class PayingClients {
  readonly #clients = new Map<string, Trust>();
  readonly #ttlMs: number;

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  /** The client's early node call, when it is trusted and has none pending; undefined otherwise. */
  claim(client: string): Trust | undefined {
    const trust = this.#clients.get(client);
    if (trust === undefined || trust.pending || trust.until <= Date.now()) return undefined;
    trust.pending = true;
    return trust;
  }

  /** A settled payment earns, or renews, its client's trust. */
  settled(client: string): void {
    if (!client || this.#ttlMs <= 0) return;
    const trust = this.#clients.get(client) ?? { until: 0, pending: false };
    // Re-inserted: the map's order is the order of last payment, the oldest forgotten first.
    this.#clients.delete(client);
    trust.until = Date.now() + this.#ttlMs;
    this.#clients.set(client, trust);
    if (this.#clients.size > PAYING_MAX) {
      for (const [oldest, t] of this.#clients) {
        // One with its early call pending stays (forgotten, it could start a second one).
        if (t.pending) continue;
        this.#clients.delete(oldest);
        break;
      }
    }
  }

  /** A refused payment ends its client's trust. */
  refused(client: string): void {
    const trust = this.#clients.get(client);
    if (trust === undefined) return;
    // Kept while another call's early node call is pending, so that one stays the only one.
    if (trust.pending) trust.until = 0;
    else this.#clients.delete(client);
  }
}

type RouteDeps = ChainDeps & {
  paying: PayingClients;
  /** Paid calls answered 503 because their Settle failed at the gRPC level (see settleOrRefuse). */
  settleUnanswered: prom.Counter;
  /** Whether to log a failed Verify now (see verifyUnavailable). */
  verifyFailureLine: () => number | undefined;
};

/**
 * The paid chain endpoints, one route per catalog entry. Order of work per request:
 * validate (free, no I/O) → authenticate (key or payment) → one rpc-proxy call →
 * settle or refund. Bad input is refused before anything is counted or charged.
 */
export function chainRouter(chain: ChainDeps): Router {
  const settleUnanswered = new prom.Counter({
    name: "payment_settle_unanswered_total",
    help: "Paid calls answered 503 because their Settle failed at the gRPC level: whether the payer was charged is in the ledger (README, Runbook)",
    registers: [chain.registry],
  });
  const deps: RouteDeps = {
    ...chain,
    paying: new PayingClients(chain.earlyCallTrustMs),
    settleUnanswered,
    verifyFailureLine: logSampler(1_000),
  };
  // Exact paths (see routes/table.ts); a known path with another method is the app's 405.
  const router = Router({ caseSensitive: true, strict: true });
  for (const endpoint of ENDPOINTS) {
    const path = endpoint.path.replace(/\{(\w+)\}/g, ":$1");
    if (endpoint.method === "GET") {
      router.get(path, (req, res) => serve(endpoint, req, res, deps));
      // A bodiless POST with a payment that needs no service (an MPP session close or top-up, which
      // the official client posts to the last paid URL); any other POST is the app's 405.
      router.post(path, (req, res, next) => {
        if (!asksNoService(req)) return next();
        void serveWithoutService(endpoint, req, res, deps, next);
      });
    } else {
      router.post(path, (req, res) => {
        if (!asksNoService(req)) return serve(endpoint, req, res, deps);
        void serveWithoutService(endpoint, req, res, deps, () => serve(endpoint, req, res, deps));
      });
    }
  }
  return router;
}

/** A POST without a body that carries payment credentials: it can only be a payment of its own. */
function asksNoService(req: Request): boolean {
  if (req.method !== "POST" || req.get("transfer-encoding") !== undefined) return false;
  const length = req.get("content-length");
  if (length !== undefined && length !== "0") return false;
  return readCredentials(req).kind === "payment";
}

async function serve(endpoint: Endpoint, req: Request, res: Response, deps: RouteDeps): Promise<void> {
  res.locals.endpoint = endpoint.path;
  res.setHeader("Cache-Control", "no-store");
  // A body the JSON parser skipped for its media type would otherwise read as "not an object".
  if (endpoint.params.body && req.is(["application/json", "application/*+json"]) === false) {
    sendError(res, "unsupported_media_type", "body: expected Content-Type: application/json", {
      parameter: "body",
    });
    return;
  }
  const checked = validateRequest(endpoint, { path: req.params, query: req.query, body: req.body });
  if (!checked.ok) {
    sendError(res, checked.code, checked.message, { parameter: checked.parameter });
    return;
  }
  const network = checked.params.network as string;
  const execute = (): Promise<Outcome> =>
    deps.rpc
      .execute({ requestId: res.locals.requestId, operation: endpoint.id, network, params: checked.params })
      .then((r): Outcome => ({ ok: true, data: r.data }), failureOf);

  const credentials: Credentials = readCredentials(req);
  res.locals.auth = credentials.kind;
  switch (credentials.kind) {
    case "api_key":
      return serveWithKey(endpoint, network, credentials.apiKey, req.ip ?? "", execute, res, deps);
    case "payment":
      return serveWithPayment(
        resourceOf(endpoint, network, deps, req.path, req.query),
        credentials.headers,
        req.ip ?? "",
        execute,
        res,
        deps,
      );
    case "invalid":
      sendError(res, "invalid_api_key", credentials.reason);
      return;
    case "none":
      return challenge(resourceOf(endpoint, network, deps, req.path, req.query), res, deps);
  }
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
function resourceOf(
  endpoint: Endpoint,
  network: string,
  deps: ChainDeps,
  path: string,
  query: Record<string, unknown>,
): Resource {
  const known = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (typeof value === "string") known.append(name, value);
  const search = known.size > 0 ? `?${known}` : "";
  return { endpoint: endpoint.path, network, url: `${deps.publicBaseUrl ?? ""}${path}${search}` };
}

/** Appends, never overwrites: several MPP challenges share WWW-Authenticate. */
function copyHeaders(res: Response, headers: { name: string; value: string }[]): void {
  for (const h of headers) res.append(h.name, h.value);
}

function setQuotaHeaders(res: Response, authz: Grant): void {
  const q = authz.quota;
  if (!q) return;
  if (q.dayLimit != null && q.dayUsed != null) {
    res.setHeader(QUOTA_HEADERS.dayLimit.name, String(q.dayLimit));
    res.setHeader(QUOTA_HEADERS.dayUsed.name, String(q.dayUsed));
  }
  if (q.monthLimit != null && q.monthUsed != null) {
    res.setHeader(QUOTA_HEADERS.monthLimit.name, String(q.monthLimit));
    res.setHeader(QUOTA_HEADERS.monthUsed.name, String(q.monthUsed));
  }
}

async function serveWithKey(
  endpoint: Endpoint,
  network: string,
  apiKey: string,
  client: string,
  execute: () => Promise<Outcome>,
  res: Response,
  deps: ChainDeps,
): Promise<void> {
  const started = performance.now();
  const receivedAt = new Date().toISOString();
  // A key this gateway does not hold costs its client a token of its unknown-key bucket (given back
  // below unless quota-meter calls the key unknown); an empty bucket is a 429, quota-meter not asked.
  const limiter = deps.leases.holds(apiKey) ? undefined : deps.unknownKeys;
  if (limiter && !limiter.take(client)) {
    sendLimit(res, "rate_limited", deps.methods.text());
    return;
  }
  let authz: Grant;
  try {
    // A unit of the key's lease when this gateway holds one; quota-meter otherwise.
    authz = await deps.leases.grant(apiKey, (leaseUnits) => {
      const authorizationId = randomUUID();
      return deps.quota
        .authorize({
          requestId: res.locals.requestId,
          apiKey,
          endpoint: endpoint.path,
          network,
          leaseUnits,
          authorizationId,
        })
        .catch((err: unknown) => {
          // Given up on (past the deadline, or the connection failed): quota-meter may still have
          // counted it, or count it yet. The call is answered 503, so whatever it counted goes back.
          deps.usage.release(authorizationId);
          throw err;
        });
    });
  } catch (err) {
    limiter?.giveBack(client);
    const failure = failureOf(err);
    if (!failure.ok) deps.logger.warn({ code: failure.code }, "quota-meter unreachable");
    sendError(res, "service_unavailable", "the API-key service is unavailable, retry with backoff");
    return;
  }
  if (limiter && authz.decision !== "DECISION_INVALID_KEY") limiter.giveBack(client);
  switch (authz.decision) {
    case "DECISION_ALLOW":
      break;
    case "DECISION_SUBSCRIPTION_INACTIVE":
      sendError(res, "subscription_inactive", inactiveMessage(deps.methods.text()));
      return;
    case "DECISION_DAILY_LIMIT_EXCEEDED":
      setQuotaHeaders(res, authz);
      sendLimit(res, "daily_limit_exceeded", deps.methods.text());
      return;
    case "DECISION_MONTHLY_LIMIT_EXCEEDED":
      setQuotaHeaders(res, authz);
      sendLimit(res, "monthly_limit_exceeded", deps.methods.text());
      return;
    case "DECISION_RATE_LIMITED":
      setQuotaHeaders(res, authz);
      sendLimit(res, "rate_limited", deps.methods.text());
      return;
    default:
      sendError(res, "invalid_api_key", "the API key is unknown or revoked");
      return;
  }
  setQuotaHeaders(res, authz);
  res.locals.principal = authz.accountId;
  const outcome = await execute();
  const status = outcome.ok ? 200 : ERRORS[outcome.code].status;
  if (outcome.ok) sendData(res, outcome.data);
  else sendError(res, outcome.code, outcome.message, outcome.extra);
  // A call that got no answer is not charged: its unit goes back to its lease when that is still
  // live (served again at once), else to both windows.
  const uncharged = authz.metered && !charged(outcome);
  const returnedToLease = uncharged && deps.leases.giveBack(apiKey, authz);
  deps.usage.add({
    requestId: res.locals.requestId,
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
  });
}

/** payment-verifier names why; an outage is a 503 to retry, anything else a 402. */
function paymentErrorCode(code: string): ErrorCode {
  if (code === "service_unavailable") return "service_unavailable";
  return code === "payment_required" ? "payment_required" : "payment_invalid";
}

async function challenge(resource: Resource, res: Response, deps: ChainDeps, error = ""): Promise<void> {
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
  const message = paymentRequiredMessage(deps.methods.text());
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
function refusePayment(verified: Verified, res: Response, deps: ChainDeps): void {
  if (verified.errorCode === "rate_limited") {
    sendLimit(res, "rate_limited", deps.methods.text());
    return;
  }
  copyHeaders(res, verified.headers);
  sendError(
    res,
    paymentErrorCode(verified.errorCode),
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
function verifyUnavailable(err: unknown, res: Response, deps: RouteDeps): void {
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
  deps: RouteDeps,
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
    sendError(res, paymentErrorCode(settled.errorCode), reason, undefined, undefined, settled.problem);
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
  deps: RouteDeps,
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
  deps: RouteDeps,
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
  if (!verified.valid && verified.errorCode === "not_applicable") return void otherwise();
  res.locals.auth = verified.scheme || "payment";
  res.locals.principal = verified.payer;
  if (!verified.valid) return refusePayment(verified, res, deps);
  return settleWithoutService(resource, credentials.headers, verified.paymentId, res, deps);
}

async function serveWithPayment(
  resource: Resource,
  credentials: Header[],
  client: string,
  execute: () => Promise<Outcome>,
  res: Response,
  deps: RouteDeps,
): Promise<void> {
  const requestId = res.locals.requestId;
  // A client whose last payment settled gets the node call of one paid call at a time started
  // beside Verify: the call's latency then hides Verify's. Nothing is served, settled or released
  // on it before Verify says valid; when Verify refuses, its answer is dropped (a read: the node is
  // not changed by it). Its other calls wait for Verify, so a burst of forged payments after a
  // genuine one costs at most this one upstream request.
  const trust = deps.paying.claim(client);
  const early = trust ? execute() : undefined;
  early?.catch(() => undefined); // awaited below, unless Verify refuses
  let verified: Awaited<ReturnType<PaymentVerifierClient["verify"]>>;
  try {
    verified = await deps.payments.verify(requestId, resource, credentials, client);
  } catch (err) {
    if (trust) trust.pending = false;
    return verifyUnavailable(err, res, deps);
  }
  if (trust) trust.pending = false;
  if (!verified.valid) deps.paying.refused(client);
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
  deps.paying.settled(client);
  const paid = {
    cost_usdc: settled.meta?.costUsdc ?? "",
    payment_chain: settled.meta?.paymentChain ?? "",
    payment_token: settled.meta?.paymentToken ?? "",
  };
  if (outcome.ok) sendData(res, outcome.data, paid);
  else sendError(res, outcome.code, outcome.message, outcome.extra, paid);
}
