import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { ACCOUNT_API_BASE, parseQueryString } from "@tollgate/catalog";
import { createRegistry, type Logger, prom, type Registry, seriesOf, serveMetrics } from "@tollgate/platform";
import express, { type NextFunction, type Request, type Response } from "express";
import { createPublicClient, http, verifyMessage } from "viem";
import { ApiError, accountRouter, sendApiError } from "./api.ts";
import { chainNamer } from "./chains.ts";
import type { DashboardConfig } from "./config.ts";
import { type Kv, openKv } from "./kv.ts";
import { type AccountClient, createAccountClient } from "./quota-meter.ts";
import { createSessions } from "./sessions.ts";
import { createPaymentsClient, type PaymentsClient } from "./settlement-worker.ts";
import { createSiwe, type SignatureCheck } from "./siwe.ts";

const PUBLIC = fileURLToPath(new URL("../public", import.meta.url));

/** The pages: each a static file, the same for every user (data comes from the JSON API). */
const PAGES: Record<string, string> = {
  "/": "index.html",
  "/keys": "keys.html",
  "/usage": "usage.html",
  "/credits": "credits.html",
  "/payments": "payments.html",
};

export interface DashboardDeps {
  logger: Logger;
  registry?: Registry;
  now?: () => number;
  /** Tests inject these; main.ts lets the server open them from the configuration. */
  kv?: Kv;
  quota?: AccountClient;
  payments?: PaymentsClient;
}

export interface DashboardHandle {
  url: string;
  port: number;
  metricsPort: number;
  stop(): Promise<void>;
}

/**
 * Wallet signatures: with a node of the chain, viem's verifySiweMessage (EOA, EIP-1271 contract
 * wallets, ERC-6492 wallets not yet deployed); without one, EOA signature recovery only.
 */
function signatureCheck(config: DashboardConfig): SignatureCheck {
  if (!config.chainRpcUrl) return (a) => verifyMessage(a);
  const client = createPublicClient({
    transport: http(config.chainRpcUrl, { timeout: 5_000, retryCount: 1 }),
  });
  return ({ address, message, signature }) => client.verifySiweMessage({ address, message, signature });
}

const isLoopback = (host: string) => host === "127.0.0.1" || host === "localhost" || host === "[::1]";

/** The headers of every answer; `gatewayUrl`: the one other origin the pages may call (the top-up). */
function securityHeaders(gatewayUrl: string | undefined) {
  // Everything the pages use is served from here: no CDN, no inline script.
  const csp = `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'${gatewayUrl ? ` ${gatewayUrl}` : ""}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`;
  return (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader("Content-Security-Policy", csp);
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.setHeader("Referrer-Policy", "no-referrer");
    res.setHeader("X-Frame-Options", "DENY");
    next();
  };
}

export async function startDashboard(config: DashboardConfig, deps: DashboardDeps): Promise<DashboardHandle> {
  const { logger } = deps;
  const registry = deps.registry ?? createRegistry("dashboard");
  const now = deps.now ?? Date.now;
  const kv =
    deps.kv ??
    (await openKv({
      url: config.redisUrl,
      clusterNodes: config.redisClusterNodes,
      prefix: config.redisPrefix,
      connectTimeoutMs: config.redisConnectTimeoutMs,
      standIn: config.redisStandIn,
      logger,
    }));
  const quota =
    deps.quota ??
    createAccountClient(config.quotaMeterAddr, { registry, token: config.meshToken }, config.grpcDeadlineMs);

  const payments =
    deps.payments ??
    createPaymentsClient(
      config.settlementWorkerAddr,
      { registry, token: config.meshToken },
      config.grpcDeadlineMs,
    );

  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", parseQueryString);
  app.set("trust proxy", config.trustProxy);
  const requests = new prom.Histogram({
    name: "http_request_duration_seconds",
    help: "Latency of dashboard requests, by route template, method and status",
    labelNames: ["endpoint", "method", "status"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const series = seriesOf(requests, ["endpoint", "method", "status"] as const);
  app.use((req, res, next) => {
    const started = performance.now();
    res.once("finish", () => {
      const endpoint = res.locals.endpoint ?? "unmatched";
      series({ endpoint, method: req.method, status: String(res.statusCode) }).observe(
        (performance.now() - started) / 1000,
      );
      // Never the cookie, the body or a query: a key or a session id must not reach a log line.
      if (req.path.startsWith("/api/")) {
        logger.info(
          { method: req.method, endpoint, status: res.statusCode, principal: res.locals.principal },
          "request",
        );
      }
    });
    next();
  });
  app.use(securityHeaders(config.gatewayUrl));
  app.get("/health", (_req, res) => {
    res.json({ status: "ok" });
  });

  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.port, config.host, (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const port = (server.address() as AddressInfo).port;
  const origin =
    config.publicUrl ?? `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
  const siwe = createSiwe({
    kv,
    now,
    origin,
    chainId: config.chainId,
    nonceTtlMs: config.nonceTtlMs,
    checkSignature: signatureCheck(config),
  });
  const sessions = createSessions({ kv, now, ttlMs: config.sessionTtlMs });

  app.use(
    ACCOUNT_API_BASE,
    express.json({ limit: 32 * 1024, type: "application/json" }),
    (err: unknown, _req: Request, res: Response, next: NextFunction) => {
      if (!err) return next();
      sendApiError(
        res,
        new ApiError("invalid_parameter", "body: expected a JSON object (at most 32 KiB)", "body"),
      );
    },
  );
  app.use(
    accountRouter({
      quota,
      payments,
      chainOf: chainNamer(config.localChains),
      gatewayUrl: config.gatewayUrl,
      siwe,
      sessions,
      logger,
      origin,
      signUpOpen: config.signUpOpen,
      // Secure everywhere but plain http on loopback (the local run), where a browser would drop it.
      secureCookie: new URL(origin).protocol === "https:" || !isLoopback(new URL(origin).hostname),
      sessionTtlMs: config.sessionTtlMs,
      kv,
      noncesPerMinute: config.noncesPerMinute,
      signUpsPerHour: config.signUpsPerHour,
    }),
  );
  app.use(ACCOUNT_API_BASE, (_req, res) => {
    sendApiError(
      res,
      new ApiError("not_found", "no such operation; see the tag account in the gateway's /openapi.json"),
    );
  });
  for (const [path, file] of Object.entries(PAGES)) {
    app.get(path, (_req, res) => {
      res.locals.endpoint = path;
      res.setHeader("Cache-Control", "no-cache");
      res.sendFile(file, { root: PUBLIC });
    });
  }
  app.use("/assets", express.static(`${PUBLIC}/assets`, { index: false, fallthrough: true, maxAge: 0 }));
  app.use((_req, res) => {
    res.status(404).type("text/plain").send("Not found");
  });
  // No 500 page for any input: whatever slipped through is a plain 400 naming the request.
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    logger.warn({ err: err instanceof Error ? err.message : String(err) }, "request refused");
    if (!res.headersSent) res.status(400).type("text/plain").send("Bad request");
  });

  const metrics = await serveMetrics(registry, config.metricsPort, config.host);
  logger.info(
    { url: origin, signUp: config.signUpOpen ? "open" : "closed", store: kv.kind },
    "dashboard ready",
  );

  let stopping: Promise<void> | undefined;
  return {
    url: origin,
    port,
    metricsPort: metrics.port,
    stop: () => {
      stopping ??= (async () => {
        await new Promise<void>((r) => {
          server.close(() => r());
          server.closeAllConnections();
        });
        await metrics.close();
        if (!deps.quota) quota.close();
        if (!deps.payments) payments.close();
        if (!deps.kv) await kv.close();
      })();
      return stopping;
    },
  };
}
