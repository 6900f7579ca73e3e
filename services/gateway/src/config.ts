import { bindHost, envBool, envInt, envString } from "@tollgate/platform";

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
  /** Largest accepted request body. Chain calls need little; calldata is the only large field. */
  bodyLimitBytes: number;
  /** Per-hop gRPC deadlines: every call the gateway makes has one. */
  deadlines: { authorizeMs: number; executeMs: number; verifyMs: number; settleMs: number };
  /** Usage reports are batched off the hot path: flush at this size or age. */
  usageBatch: { maxRecords: number; maxDelayMs: number };
  /** Hops of X-Forwarded-For to trust (0 behind no proxy). */
  trustProxy: number;
  /** One JSON access line per API call (a stdout write per request; off for raw throughput). */
  accessLog: boolean;
}

export function loadConfig(): GatewayConfig {
  return {
    host: bindHost(),
    port: envInt("PORT", 8080),
    metricsPort: envInt("METRICS_PORT", 9460),
    rpcProxyAddr: envString("RPC_PROXY_ADDR", "127.0.0.1:50053"),
    quotaMeterAddr: envString("QUOTA_METER_ADDR", "127.0.0.1:50051"),
    paymentVerifierAddr: envString("PAYMENT_VERIFIER_ADDR", "127.0.0.1:50052"),
    publicBaseUrl: publicBaseUrl(process.env.PUBLIC_BASE_URL),
    bodyLimitBytes: envInt("BODY_LIMIT_BYTES", 128 * 1024),
    deadlines: {
      authorizeMs: envInt("AUTHORIZE_DEADLINE_MS", 1_000),
      executeMs: envInt("EXECUTE_DEADLINE_MS", 10_000),
      verifyMs: envInt("VERIFY_DEADLINE_MS", 10_000),
      settleMs: envInt("SETTLE_DEADLINE_MS", 30_000),
    },
    usageBatch: {
      maxRecords: envInt("USAGE_BATCH_MAX", 200),
      maxDelayMs: envInt("USAGE_BATCH_DELAY_MS", 100),
    },
    trustProxy: envInt("TRUST_PROXY_HOPS", 0),
    accessLog: envBool("ACCESS_LOG", true),
  };
}

/** PUBLIC_BASE_URL: an http(s) origin, optionally with a path prefix; no trailing slash. */
function publicBaseUrl(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const url = URL.parse(value);
  if (!url || !["http:", "https:"].includes(url.protocol) || url.search || url.hash) {
    throw new Error("PUBLIC_BASE_URL must be an http(s) URL without query or fragment");
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, "");
}
