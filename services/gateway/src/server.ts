import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { PAYMENT_HEADERS, QUOTA_HEADERS, REQUEST_ID_HEADER } from "@tollgate/catalog";
import {
  createLogger,
  createRegistry,
  type Logger,
  prom,
  type Registry,
  serveMetrics,
} from "@tollgate/platform";
import cors from "cors";
import express, { type NextFunction, type Request, type Response } from "express";
import { createPaymentVerifierClient, type PaymentVerifierClient } from "./clients/payment-verifier.ts";
import { createQuotaMeterClient, type QuotaMeterClient } from "./clients/quota-meter.ts";
import { createRpcProxyClient, type RpcProxyClient } from "./clients/rpc-proxy.ts";
import type { GatewayConfig } from "./config.ts";
import { requestId, sendError } from "./envelope.ts";
import { chainRouter } from "./routes/chain.ts";
import { freeRouter } from "./routes/free.ts";
import { createUsageReporter, type UsageReporter } from "./usage-reporter.ts";

export interface GatewayDeps {
  rpc: RpcProxyClient;
  quota: QuotaMeterClient;
  payments: PaymentVerifierClient;
  usage: UsageReporter;
  logger: Logger;
  registry: Registry;
}

/** The express app: routing, validation, envelope and the auth decision; no chain logic. */
export function createApp(config: GatewayConfig, deps: GatewayDeps): express.Express {
  const app = express();
  app.disable("x-powered-by");
  // Chain answers are fresh per call (spec 1.1): no validators, so a conditional
  // request can never turn a paid call into a bodiless 304.
  app.set("etag", false);
  app.set("trust proxy", config.trustProxy);
  app.set("query parser", "simple");

  const requests = new prom.Histogram({
    name: "http_request_duration_seconds",
    help: "Latency of HTTP requests served, by endpoint template, method and status",
    labelNames: ["endpoint", "method", "status"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [deps.registry],
  });
  app.use((req, res, next) => {
    const end = requests.startTimer();
    const started = performance.now();
    res.once("finish", () => {
      // Unknown paths share one label so scanners cannot blow up metric cardinality.
      const endpoint = res.locals.matched ? res.locals.endpoint : "unmatched";
      end({ endpoint, method: req.method, status: String(res.statusCode) });
      // One access line per API call, keyed by the id the client sees in meta.request_id.
      if (config.accessLog && req.path.startsWith("/api/")) {
        deps.logger.info(
          {
            request_id: res.locals.requestId,
            client_request_id: res.locals.clientRequestId,
            method: req.method,
            endpoint,
            status: res.statusCode,
            ms: Math.round((performance.now() - started) * 10) / 10,
            auth: res.locals.auth ?? "none",
            principal: res.locals.principal,
          },
          "request",
        );
      }
    });
    next();
  });
  app.use(requestId);
  // A public API called by agents and browsers: any origin, no cookies, and the
  // payment and quota headers readable by scripts.
  app.use(
    cors({
      origin: "*",
      allowedHeaders: [
        "Authorization",
        "Content-Type",
        PAYMENT_HEADERS.signature.name,
        PAYMENT_HEADERS.signatureV1.name,
        REQUEST_ID_HEADER,
      ],
      exposedHeaders: [
        PAYMENT_HEADERS.required.name,
        PAYMENT_HEADERS.response.name,
        PAYMENT_HEADERS.mppChallenge.name,
        PAYMENT_HEADERS.mppReceipt.name,
        REQUEST_ID_HEADER,
        ...Object.values(QUOTA_HEADERS).map((h) => h.name),
        "Retry-After",
      ],
      maxAge: 600,
    }),
  );
  app.use(
    express.json({
      limit: config.bodyLimitBytes,
      strict: false,
      type: ["application/json", "application/*+json"],
    }),
  );
  app.use((_req, res, next) => {
    res.locals.matched = true;
    next();
  });
  app.use(freeRouter({ ...deps, publicBaseUrl: config.publicBaseUrl }));
  app.use(chainRouter({ ...deps, publicBaseUrl: config.publicBaseUrl }));
  app.use((req, res) => {
    res.locals.matched = false;
    sendError(res, "not_found", `no endpoint ${req.method} ${req.path}; see /openapi.json`);
  });
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const e = err as { type?: string; status?: number };
    if (err instanceof URIError) {
      // The router could not percent-decode a path segment.
      sendError(res, "invalid_parameter", "path: malformed percent-encoding in the URL path", {
        parameter: "path",
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
  return app;
}

declare global {
  namespace Express {
    interface Locals {
      matched: boolean;
    }
  }
}

export async function startGateway(config: GatewayConfig, logger = createLogger("gateway")) {
  const registry = createRegistry("gateway");
  const mesh = { registry, token: config.meshToken };
  const rpc = createRpcProxyClient(config.rpcProxyAddr, mesh, config.deadlines.executeMs);
  const quota = createQuotaMeterClient(config.quotaMeterAddr, mesh, config.deadlines.authorizeMs);
  const payments = createPaymentVerifierClient(config.paymentVerifierAddr, mesh, config.deadlines);
  const usage = createUsageReporter(quota, logger, config.usageBatch);
  const app = createApp(config, { rpc, quota, payments, usage, logger, registry });

  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.port, config.host, () => resolve(s));
    s.once("error", reject);
  });
  // Slow clients must not hold sockets forever; keep-alive stays on for benchmarks and SDKs.
  server.requestTimeout = 60_000;
  server.headersTimeout = 15_000;
  server.keepAliveTimeout = 65_000;
  const metrics = await serveMetrics(registry, config.metricsPort, config.host);
  const port = (server.address() as AddressInfo).port;
  logger.info({ port, metricsPort: metrics.port }, "ready");

  return {
    port,
    metricsPort: metrics.port,
    async stop() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await usage.flush();
      await metrics.close();
      rpc.close();
      quota.close();
      payments.close();
    },
  };
}
