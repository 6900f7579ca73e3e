// What every answer of the gateway gets, whichever lane served it (Express, or the fast lane of
// routes/fast-lane.ts): the CORS headers of a simple response, and one observation of the request
// (the latency histogram and the access line).
import type { IncomingMessage } from "node:http";
import {
  CREDIT_HEADERS,
  PAYMENT_HEADERS,
  QUOTA_HEADERS,
  REQUEST_ID_HEADER,
  SIGN_IN_HEADER,
  TOP_UP_KEY_HEADER,
} from "@tollgate/catalog";
import { type Logger, prom, type Registry, seriesOf } from "@tollgate/platform";
import type { Reply } from "./envelope.ts";

// A public API called by agents and browsers: any origin, no cookies, and the payment
// and quota headers readable by scripts.
export const CORS = {
  origin: "*",
  allowedHeaders: [
    "Authorization",
    "Content-Type",
    // The official @x402/fetch client sets it on every paid request (meaningless on a request, but a
    // preflight refusing it leaves a browser unable to pay at all).
    "Access-Control-Expose-Headers",
    PAYMENT_HEADERS.signature.name,
    PAYMENT_HEADERS.signatureV1.name,
    SIGN_IN_HEADER.name,
    REQUEST_ID_HEADER,
    TOP_UP_KEY_HEADER,
  ],
  exposedHeaders: [
    PAYMENT_HEADERS.required.name,
    PAYMENT_HEADERS.response.name,
    PAYMENT_HEADERS.mppChallenge.name,
    PAYMENT_HEADERS.mppReceipt.name,
    REQUEST_ID_HEADER,
    ...Object.values(QUOTA_HEADERS).map((h) => h.name),
    CREDIT_HEADERS.remaining.name,
    "Retry-After",
  ],
  maxAge: 600,
};

const EXPOSED = CORS.exposedHeaders.join(",");

/** The CORS headers of a simple (not preflight) response, as the `cors` package writes them. */
export function simpleCors(res: Reply): void {
  res.setHeader("Access-Control-Allow-Origin", CORS.origin);
  res.setHeader("Access-Control-Expose-Headers", EXPOSED);
}

/** The request's path, as Express's `req.path` reads it. */
export function pathOf(url: string): string {
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q);
}

/**
 * Observes one answered request: the latency histogram, and one access line per API call, keyed by
 * the id the client sees in meta.request_id.
 */
export function requestRecorder(opts: { accessLog: boolean; logger: Logger; registry: Registry }) {
  const requests = new prom.Histogram({
    name: "http_request_duration_seconds",
    help: "Latency of HTTP requests served, by endpoint template, method, status and how the call was authenticated",
    labelNames: ["endpoint", "method", "status", "auth"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [opts.registry],
  });
  const requestSeries = seriesOf(requests, ["endpoint", "method", "status", "auth"] as const);
  return (req: IncomingMessage, res: Reply, started: number): void => {
    // Only templates are labels (unknown paths share one), so callers cannot blow up
    // metric cardinality with the paths they send.
    const endpoint = res.locals.endpoint ?? "unmatched";
    // Set only by the gateway's own routes (credential kind, then the verified scheme): bounded.
    const auth = res.locals.auth ?? "none";
    const status = String(res.statusCode);
    const method = req.method ?? "";
    requestSeries({ endpoint, method, status, auth }).observe((performance.now() - started) / 1000);
    if (opts.accessLog && pathOf(req.url ?? "").startsWith("/api/")) {
      opts.logger.info(
        {
          request_id: res.locals.requestId,
          client_request_id: res.locals.clientRequestId,
          method,
          endpoint,
          status: res.statusCode,
          ms: Math.round((performance.now() - started) * 10) / 10,
          auth,
          principal: res.locals.principal,
        },
        "request",
      );
    }
  };
}
