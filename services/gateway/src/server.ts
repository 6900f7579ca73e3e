import { randomUUID } from "node:crypto";
import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { ERRORS, type ErrorCode, parseQueryString, REQUEST_ID_HEADER } from "@tollgate/catalog";
import { createLogger, createRegistry, type Logger, type Registry, serveMetrics } from "@tollgate/platform";
import cors from "cors";
import express, { type NextFunction, type Request, type Response } from "express";
import { createPaymentVerifierClient, type PaymentVerifierClient } from "./clients/payment-verifier.ts";
import { createQuotaMeterClient, type QuotaMeterClient } from "./clients/quota-meter.ts";
import { createRpcProxyClient, type RpcProxyClient } from "./clients/rpc-proxy.ts";
import type { GatewayConfig } from "./config.ts";
import { CORS, requestRecorder, simpleCors } from "./edge.ts";
import { requestId, sendError } from "./envelope.ts";
import {
  createLeaseBook,
  createUnknownKeyLimiter,
  type LeaseBook,
  type UnknownKeyLimiter,
} from "./leases.ts";
import { type AcceptedMethods, watchPaymentMethods } from "./payment-methods.ts";
import { keepRawBody } from "./raw-body.ts";
import { chainCalls } from "./routes/chain.ts";
import { creditsRouter } from "./routes/credits.ts";
import { fastLane } from "./routes/fast-lane.ts";
import { freeRouter } from "./routes/free.ts";
import { canonicalOf, endpointOf, routeOf, undecodableParam } from "./routes/table.ts";
import { createUsageReporter, type UsageReporter } from "./usage-reporter.ts";

interface GatewayDeps {
  rpc: RpcProxyClient;
  quota: QuotaMeterClient;
  payments: PaymentVerifierClient;
  /** The per-call payment methods payment-verifier accepts (DescribeMethods). */
  methods: AcceptedMethods;
  /** Quota leases held for hot keys (calls served without a quota-meter hop). */
  leases: LeaseBook;
  /** Unknown API keys per client address; unset, not limited. */
  unknownKeys: UnknownKeyLimiter | undefined;
  usage: UsageReporter;
  logger: Logger;
  registry: Registry;
  /** Set when the process drains: /health answers 503 and every answer closes its connection. */
  lifecycle?: Lifecycle;
}

interface Lifecycle {
  draining: boolean;
}

/**
 * The gateway's request listener: routing, validation, envelope and the auth decision; no chain
 * logic. The fast lane (routes/fast-lane.ts) takes the API-key chain GETs; Express the rest.
 */
function createListener(
  config: GatewayConfig,
  deps: GatewayDeps,
): (req: IncomingMessage, res: ServerResponse) => void {
  const app = express();
  app.disable("x-powered-by");
  // Chain answers are fresh per call (spec 1.1): no validators, so a conditional
  // request can never turn a paid call into a bodiless 304.
  app.set("etag", false);
  app.set("trust proxy", config.trustProxy);
  app.set("query parser", parseQueryString);
  // Exact paths only: a case or trailing-slash variant is a 404 (with a hint), never served.
  app.set("case sensitive routing", true);
  app.set("strict routing", true);

  const record = requestRecorder({
    accessLog: config.accessLog,
    logger: deps.logger,
    registry: deps.registry,
  });
  const lifecycle = deps.lifecycle ?? { draining: false };
  app.use((req, res, next) => {
    const started = performance.now();
    // Draining: keep-alive clients reconnect (to another replica) after this answer.
    if (lifecycle.draining) res.setHeader("Connection", "close");
    res.once("finish", () => record(req, res, started));
    next();
  });
  app.use(requestId);
  app.use(methodEdges());
  app.use(
    express.json({
      limit: config.bodyLimitBytes,
      strict: false,
      type: ["application/json", "application/*+json"],
      verify: keepRawBody,
    }),
  );
  app.use(
    freeRouter({
      ...deps,
      lifecycle,
      publicBaseUrl: config.publicBaseUrl,
      dashboardUrl: config.dashboardUrl,
      rpcSendRawTransaction: config.rpcSendRawTransaction,
    }),
  );
  const calls = chainCalls({
    ...deps,
    publicBaseUrl: config.publicBaseUrl,
    earlyCallTrustMs: config.earlyCallTrustMs,
    rpcSendRawTransaction: config.rpcSendRawTransaction,
  });
  app.use(calls.router());
  app.use(
    creditsRouter({
      ...deps,
      publicBaseUrl: config.publicBaseUrl,
      payments: calls.payments,
    }),
  );
  app.use((req, res) => {
    const route = routeOf(req.path);
    if (route) {
      res.locals.endpoint = route.template;
      res.setHeader("Allow", route.method);
      sendError(res, "method_not_allowed", `${route.template} takes ${route.method}`);
      return;
    }
    const canonical = canonicalOf(req.path);
    const hint = canonical
      ? `; paths are case-sensitive and take no trailing slash: did you mean ${canonical}?`
      : "; see /openapi.json";
    sendError(res, "not_found", `no endpoint ${req.method} ${req.path}${hint}`);
  });
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = err as { type?: string; status?: number };
    // Failed before (or while) routing: name the template when the path is a known one.
    res.locals.endpoint ??= routeOf(req.path)?.template;
    if (err instanceof URIError) {
      // The router could not percent-decode a path segment: name the parameter it holds.
      const parameter = undecodableParam(req.path) ?? "path";
      sendError(res, "invalid_parameter", `${parameter}: malformed percent-encoding in the URL path`, {
        parameter,
      });
    } else if (e.type === "entity.parse.failed") {
      sendError(res, "invalid_body", "body: malformed JSON", { parameter: "body" });
    } else if (e.type === "entity.too.large") {
      sendError(res, "payload_too_large", `body: larger than ${config.bodyLimitBytes} bytes`, {
        parameter: "body",
      });
    } else if (e.status === 415) {
      sendError(res, "unsupported_media_type", "body: unsupported charset or content encoding", {
        parameter: "body",
      });
    } else if (e.status && e.status >= 400 && e.status < 500) {
      sendError(res, "invalid_body", "body: unreadable request body", { parameter: "body" });
    } else {
      deps.logger.error({ err }, "unhandled error");
      sendError(res, "internal_error", "internal error, retry with backoff");
    }
  });
  const lane = fastLane({
    calls,
    trust: app.get("trust proxy fn") as (addr: string, i: number) => boolean,
    record,
    lifecycle,
    logger: deps.logger,
  });
  return (req, res) => {
    if (!lane(req, res)) app(req, res);
  };
}

/**
 * CORS, OPTIONS and HEAD. A preflight advertises the method its path takes (an unknown path is
 * a 404), plus POST on a paid GET endpoint, where a browser's payment client posts a bodiless
 * session top-up or close; HEAD under /api/ is a 405 naming the method, so a paid endpoint is
 * never served, counted or charged without its body. Every other request gets the CORS headers
 * of a simple response.
 */
function methodEdges() {
  const simple = (_req: Request, res: Response, next: NextFunction) => {
    simpleCors(res);
    next();
  };
  const preflight = {
    GET: cors({ ...CORS, methods: ["GET"] }),
    POST: cors({ ...CORS, methods: ["POST"] }),
    paidGET: cors({ ...CORS, methods: ["GET", "POST"] }),
  };
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== "OPTIONS" && req.method !== "HEAD") return simple(req, res, next);
    if (req.method === "HEAD" && !req.path.startsWith("/api/")) return simple(req, res, next);
    const route = routeOf(req.path);
    if (!route) {
      // The 404 handler answers (cors would answer any OPTIONS as a preflight).
      if (req.method === "HEAD") return simple(req, res, next);
      res.setHeader("Access-Control-Allow-Origin", "*");
      return next();
    }
    res.locals.endpoint = route.template;
    res.setHeader("Allow", route.method);
    if (req.method === "OPTIONS")
      return preflight[route.paid && route.method === "GET" ? "paidGET" : route.method](req, res, next);
    simple(req, res, () => {
      sendError(res, "method_not_allowed", `${route.template} takes ${route.method}; HEAD is not served`);
    });
  };
}

/** What Node's HTTP parser refused, in the envelope (the request never reached express). */
const CLIENT_ERRORS: Record<string, ErrorCode> = {
  HPE_HEADER_OVERFLOW: "headers_too_large",
  ERR_HTTP_REQUEST_TIMEOUT: "request_timeout",
};

function answerClientError(err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket): void {
  const busy = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === "ECONNRESET" || !socket.writable || busy?.headersSent) {
    socket.destroy();
    return;
  }
  const code = CLIENT_ERRORS[err.code ?? ""] ?? "malformed_request";
  const id = randomUUID();
  // The request line, when the parser got that far, names the endpoint.
  const path = /^[A-Z]+ (\/[^ ?]*)/.exec(err.rawPacket?.toString("latin1", 0, 2048) ?? "")?.[1];
  const body = JSON.stringify({
    data: null,
    error: { code, message: ERRORS[code].description },
    meta: { endpoint: path ? endpointOf(path) : "", request_id: id },
  });
  const status = ERRORS[code].status;
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      "Content-Type: application/json; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `${REQUEST_ID_HEADER}: ${id}\r\n` +
      "Access-Control-Allow-Origin: *\r\n" +
      `Access-Control-Expose-Headers: ${REQUEST_ID_HEADER}\r\n` +
      "Cache-Control: no-store\r\n" +
      "Connection: close\r\n\r\n" +
      body,
  );
}

export async function startGateway(config: GatewayConfig, logger = createLogger("gateway")) {
  const registry = createRegistry("gateway");
  const mesh = { registry, token: config.meshToken };
  const rpc = createRpcProxyClient(config.rpcProxyAddr, mesh, config.deadlines.executeMs);
  const quota = createQuotaMeterClient(config.quotaMeterAddr, mesh, config.deadlines.authorizeMs);
  const payments = createPaymentVerifierClient(config.paymentVerifierAddr, mesh, config.deadlines);
  const usage = createUsageReporter(quota, logger, config.usageBatch);
  const methods = await watchPaymentMethods(payments, logger);
  const leases = createLeaseBook({ maxUnits: config.leaseMaxUnits, maxKeys: config.leaseBookMaxKeys });
  const unknownKeys =
    config.unknownKeys.perSecond > 0 ? createUnknownKeyLimiter(config.unknownKeys) : undefined;
  // Ended leases give their unused units back with the next usage batch.
  const sweeper = setInterval(() => usage.returnLeases(leases.sweep()), 250);
  sweeper.unref();
  const lifecycle: Lifecycle = { draining: false };
  const listener = createListener(config, {
    rpc,
    quota,
    payments,
    methods,
    leases,
    unknownKeys,
    usage,
    logger,
    registry,
    lifecycle,
  });

  const server: Server = await new Promise((resolve, reject) => {
    const s = createServer(listener).listen(config.port, config.host, () => resolve(s));
    s.once("error", reject);
  });
  server.on("clientError", answerClientError);
  // Slow clients must not hold sockets forever; keep-alive stays on for benchmarks and SDKs.
  server.requestTimeout = 60_000;
  server.headersTimeout = 15_000;
  server.keepAliveTimeout = 65_000;
  const metrics = await serveMetrics(registry, config.metricsPort, config.host);
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    metricsPort: metrics.port,
    /** /health answers 503 (load balancers stop sending here); requests are still served. */
    drain() {
      lifecycle.draining = true;
    },
    /**
     * Refuses new connections, lets every request in flight finish (its gRPC calls, settlement
     * included), returns leases and flushes usage, then closes the gRPC channels.
     */
    async stop() {
      lifecycle.draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // close() ends the idle keep-alive sockets; a busy one becomes idle after its answer (its
      // request started before the drain, so its answer may not say Connection: close).
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      await closed;
      clearInterval(sweep);
      clearInterval(sweeper);
      usage.returnLeases(leases.drain());
      await usage.flush();
      await metrics.close();
      methods.close();
      rpc.close();
      quota.close();
      payments.close();
    },
  };
}
