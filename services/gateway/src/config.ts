import { ConfigError, parseTrustProxy, readMeshToken } from "@tollgate/platform";
import { ENV } from "./env.ts";

export interface GatewayConfig {
  host: string;
  port: number;
  metricsPort: number;
  rpcProxyAddr: string;
  quotaMeterAddr: string;
  paymentVerifierAddr: string;
  /**
   * Base URL clients use: the OpenAPI `servers` entry, llms.txt links and payment resource
   * URLs. Unset, the OpenAPI document has no `servers` (relative) and llms.txt says `{base_url}`.
   */
  publicBaseUrl: string | undefined;
  /** Where the account dashboard is served: the `servers` entry of its JSON API in /openapi.json. */
  dashboardUrl: string | undefined;
  /** Largest accepted request body. Chain calls need little; calldata is the only large field. */
  bodyLimitBytes: number;
  /** Per-hop gRPC deadlines: every call the gateway makes has one. */
  deadlines: { authorizeMs: number; executeMs: number; verifyMs: number; settleMs: number };
  /** The largest quota lease asked for a hot key (1 = ask quota-meter on every call). */
  leaseMaxUnits: number;
  /** Usage reports are batched off the hot path: flush at this size or age. */
  usageBatch: { maxRecords: number; maxDelayMs: number };
  /**
   * Which X-Forwarded-For entries to believe for the client's address (used by the payment attempt
   * limits): a hop count, or the addresses/CIDRs of the trusted proxies. 0 behind no proxy.
   */
  trustProxy: number | string[];
  /** One JSON access line per API call (a stdout write per request; off for raw throughput). */
  accessLog: boolean;
  /** The gateway's mesh token, sent on every gRPC call (the services accept it by its digest). */
  meshToken: string;
}

export function loadConfig(): GatewayConfig {
  return {
    host: ENV.string("BIND_HOST"),
    port: ENV.int("PORT"),
    metricsPort: ENV.int("METRICS_PORT"),
    rpcProxyAddr: ENV.string("RPC_PROXY_ADDR"),
    quotaMeterAddr: ENV.string("QUOTA_METER_ADDR"),
    paymentVerifierAddr: ENV.string("PAYMENT_VERIFIER_ADDR"),
    publicBaseUrl: publicBaseUrl(ENV.raw("PUBLIC_BASE_URL")),
    dashboardUrl: publicBaseUrl(ENV.raw("DASHBOARD_URL"), "DASHBOARD_URL"),
    bodyLimitBytes: ENV.int("BODY_LIMIT_BYTES"),
    deadlines: {
      authorizeMs: ENV.int("AUTHORIZE_DEADLINE_MS"),
      executeMs: ENV.int("EXECUTE_DEADLINE_MS"),
      verifyMs: ENV.int("VERIFY_DEADLINE_MS"),
      settleMs: ENV.int("SETTLE_DEADLINE_MS"),
    },
    leaseMaxUnits: Math.max(1, ENV.int("LEASE_MAX_UNITS")),
    usageBatch: {
      maxRecords: ENV.int("USAGE_BATCH_MAX"),
      maxDelayMs: ENV.int("USAGE_BATCH_DELAY_MS"),
    },
    trustProxy: parseTrustProxy(ENV.string("TRUST_PROXY")),
    accessLog: ENV.bool("ACCESS_LOG"),
    meshToken: readMeshToken(),
  };
}

/** PUBLIC_BASE_URL: an http(s) origin, optionally with a path prefix; no trailing slash. */
function publicBaseUrl(value: string | undefined, name = "PUBLIC_BASE_URL"): string | undefined {
  if (!value) return undefined;
  const url = URL.parse(value);
  if (!url || !["http:", "https:"].includes(url.protocol) || url.search || url.hash) {
    throw new ConfigError(`${name} must be an http(s) URL without query or fragment, got "${value}"`);
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, "");
}
