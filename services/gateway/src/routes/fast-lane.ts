// The fast lane: API-key calls of the chain GET endpoints, served with node:http alone. Express's
// per-request machinery (its router walking every layer, a closure per middleware, the getters
// behind req.query and req.ip) cost the gateway more CPU per call than the rest of its work
// (docs/benchmarks.md), and these calls are the bulk of the traffic. The lane runs the functions the
// Express routes run (chain.ts serveKey: validation, apiKeyAuth, the envelope; edge.ts: CORS and
// the request's metrics and access line), and hands every request it does not take to Express
// untouched: other methods and paths, payments, no or invalid credentials, a body, a path Express
// would read differently.
import type { IncomingMessage, ServerResponse } from "node:http";
import { ENDPOINTS, type Endpoint, parseQueryString } from "@tollgate/catalog";
import type { Logger } from "@tollgate/platform";
import proxyaddr from "proxy-addr";
import { readCredentials } from "../auth/credentials.ts";
import { simpleCors } from "../edge.ts";
import { assignRequestId, type Reply, sendError } from "../envelope.ts";
import type { ChainCalls } from "./chain.ts";

interface ParamRoute {
  endpoint: Endpoint;
  pattern: RegExp;
  names: string[];
}

/** Characters after which Express's URL parser reads a path differently (a fragment, odd spaces). */
const UNUSUAL = /[#\u00a0\ufeff]/;

export interface FastLaneDeps {
  calls: ChainCalls;
  /** Express's compiled `trust proxy` function, so `ip` reads as `req.ip` does. */
  trust: (addr: string, i: number) => boolean;
  /** Observes the answered request (edge.ts requestRecorder). */
  record: (req: IncomingMessage, res: Reply, started: number) => void;
  lifecycle: { draining: boolean };
  logger: Logger;
}

/** The lane: true when it took the request (and answers it), false to leave it to Express. */
export function fastLane(deps: FastLaneDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  // Exact paths, as the Express routes match them (case-sensitive, no trailing slash).
  const literal = new Map<string, Endpoint>();
  const withParams: ParamRoute[] = [];
  for (const endpoint of ENDPOINTS) {
    if (endpoint.method !== "GET") continue;
    const names: string[] = [];
    const source = endpoint.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      names.push(name);
      return "([^/]+)";
    });
    if (names.length === 0) literal.set(endpoint.path, endpoint);
    else withParams.push({ endpoint, pattern: new RegExp(`^${source}$`), names });
  }

  return (req, res) => {
    if (req.method !== "GET") return false;
    const url = req.url ?? "";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    let endpoint = literal.get(path);
    let params: Record<string, string> = {};
    if (!endpoint) {
      const found = matchParams(withParams, path);
      if (!found) return false;
      ({ endpoint, params } = found);
    }
    const headers = req.headers;
    if (headers["transfer-encoding"] !== undefined) return false;
    if (headers["content-length"] !== undefined && headers["content-length"] !== "0") return false;
    const credentials = readCredentials(req);
    if (credentials.kind !== "api_key" || UNUSUAL.test(url)) return false;

    const started = performance.now();
    const reply = res as Reply;
    reply.locals = { requestId: "" };
    if (deps.lifecycle.draining) res.setHeader("Connection", "close");
    assignRequestId(req, reply);
    simpleCors(reply);
    const input = {
      path: params,
      query: parseQueryString(q === -1 ? "" : url.slice(q + 1)),
      body: undefined,
    };
    const caller = {
      get ip(): string | undefined {
        return proxyaddr(req, deps.trust);
      },
    };
    deps.calls.serveKey(endpoint, input, credentials, caller, reply).then(
      () => deps.record(req, reply, started),
      (err: unknown) => {
        deps.logger.error({ err }, "unhandled error");
        if (res.headersSent) res.destroy();
        else sendError(reply, "internal_error", "internal error, retry with backoff");
        deps.record(req, reply, started);
      },
    );
    return true;
  };
}

/** The route with path parameters this path takes, its parameters decoded; undefined if none, or undecodable. */
function matchParams(
  routes: ParamRoute[],
  path: string,
): { endpoint: Endpoint; params: Record<string, string> } | undefined {
  for (const route of routes) {
    const m = route.pattern.exec(path);
    if (!m) continue;
    const params: Record<string, string> = {};
    for (let i = 0; i < route.names.length; i++) {
      try {
        params[route.names[i] as string] = decodeURIComponent(m[i + 1] as string);
      } catch {
        return undefined; // Express answers the malformed percent-encoding, naming the parameter
      }
    }
    return { endpoint: route.endpoint, params };
  }
  return undefined;
}
