import { CREDITS_ENDPOINT, ENDPOINTS, RPC_ENDPOINT } from "@tollgate/catalog";

/**
 * Every path the gateway serves and its one method: the chain endpoints from the catalog
 * plus the free ones. The routers register these paths; HEAD and OPTIONS answers, early
 * errors (before routing finished) and 404 hints read them here. Routing is exact: paths
 * are case-sensitive and take no trailing slash.
 */
export const FREE_PATHS = {
  pricing: "/api/pricing",
  networks: "/api/networks",
  usage: "/api/account/usage",
  openapi: "/openapi.json",
  openapiWellKnown: "/.well-known/openapi.json",
  llms: "/llms.txt",
  /** The x402 discovery list: every paid resource with its offers (routes/discovery.ts). */
  x402: "/.well-known/x402",
  health: "/health",
} as const;

export interface Route {
  /** Path template, as meta.endpoint shows it. */
  template: string;
  method: "GET" | "POST";
  /** A paid chain endpoint: a bodiless POST may also carry a payment's own action there. */
  paid: boolean;
  /** Names of the path parameters, in segment order. */
  params: string[];
  exact: RegExp;
  /** The same path in any letter case, with or without a trailing slash. */
  loose: RegExp;
}

function route(template: string, method: "GET" | "POST", paid: boolean): Route {
  const params: string[] = [];
  const source = template
    .split("/")
    .map((segment) => {
      const param = /^\{(\w+)\}$/.exec(segment)?.[1];
      if (param) {
        params.push(param);
        return "[^/]+";
      }
      return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  return {
    template,
    method,
    paid,
    params,
    exact: new RegExp(`^${source}$`),
    loose: new RegExp(`^${source}/?$`, "i"),
  };
}

const ROUTES: readonly Route[] = [
  ...ENDPOINTS.map((e) => route(e.path, e.method, true)),
  route(RPC_ENDPOINT.path, RPC_ENDPOINT.method, true),
  // Buying credits (routes/credits.ts): paid, but never a call a payment's own action is posted to.
  route(CREDITS_ENDPOINT.path, CREDITS_ENDPOINT.method, false),
  ...Object.values(FREE_PATHS).map((p) => route(p, "GET", false)),
];

/** The route serving exactly this path (not on the hot path: only for edge cases). */
export function routeOf(path: string): Route | undefined {
  return ROUTES.find((r) => r.exact.test(path));
}

/** meta.endpoint for a path: its template, or the path itself when nothing serves it. */
export function endpointOf(path: string): string {
  return routeOf(path)?.template ?? path;
}

/** The path a case or trailing-slash variant was probably meant as, for a 404's hint. */
export function canonicalOf(path: string): string | undefined {
  const r = ROUTES.find((candidate) => candidate.loose.test(path));
  if (!r) return undefined;
  const given = path.replace(/\/$/, "").split("/");
  // Literal segments take the template's case; parameter values stay as sent.
  return r.template
    .split("/")
    .map((segment, i) => (/^\{\w+\}$/.test(segment) ? (given[i] ?? segment) : segment))
    .join("/");
}

/** The name of the path parameter whose segment cannot be percent-decoded. */
export function undecodableParam(path: string): string | undefined {
  const r = routeOf(path);
  if (!r) return undefined;
  const given = path.split("/");
  const template = r.template.split("/");
  for (let i = 0; i < template.length; i++) {
    const name = /^\{(\w+)\}$/.exec(template[i] ?? "")?.[1];
    if (!name) continue;
    try {
      decodeURIComponent(given[i] ?? "");
    } catch {
      return name;
    }
  }
  return undefined;
}
