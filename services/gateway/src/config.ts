import { bindHost, ConfigError, envBool, envInt, envString, readMeshToken } from "@tollgate/platform";

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
    leaseMaxUnits: Math.max(1, envInt("LEASE_MAX_UNITS", 64)),
    usageBatch: {
      maxRecords: envInt("USAGE_BATCH_MAX", 200),
      maxDelayMs: envInt("USAGE_BATCH_DELAY_MS", 100),
    },
    trustProxy: trustProxyFromEnv(),
    accessLog: envBool("ACCESS_LOG", true),
    meshToken: readMeshToken(),
  };
}

/** PUBLIC_BASE_URL: an http(s) origin, optionally with a path prefix; no trailing slash. */
function publicBaseUrl(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const url = URL.parse(value);
  if (!url || !["http:", "https:"].includes(url.protocol) || url.search || url.hash) {
    throw new ConfigError(`PUBLIC_BASE_URL must be an http(s) URL without query or fragment, got "${value}"`);
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, "");
}

/** TRUST_PROXY: a number of hops (e.g. `1` behind one load balancer), or a comma-separated list of proxy addresses or CIDRs. */
function trustProxyFromEnv(): number | string[] {
  const raw = envString("TRUST_PROXY", "0").trim();
  if (/^[0-9]+$/.test(raw)) return Number(raw);
  const list = raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const entry of list) {
    if (!/^[0-9a-fA-F.:]+(\/[0-9]{1,3})?$/.test(entry)) {
      throw new ConfigError(`TRUST_PROXY must be a hop count or a list of addresses/CIDRs, got "${entry}"`);
    }
  }
  return list;
}
