import { ConfigError, EXCHANGE_CALL_MAX_MS, parseTrustProxy, readMeshToken } from "@tollgate/platform";
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
  /** The most API keys the lease book remembers. */
  leaseBookMaxKeys: number;
  /** Unknown-key answers allowed per client address (a token bucket); perSecond 0 turns it off. */
  unknownKeys: { perSecond: number; burst: number };
  /** How long a settled payment lets its client's next paid call start the node call beside Verify. */
  earlyCallTrustMs: number;
  /** The JSON-RPC endpoint relays eth_sendRawTransaction (off by default). */
  rpcSendRawTransaction: boolean;
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
      authorizeMs: callDeadline("AUTHORIZE_DEADLINE_MS"),
      executeMs: callDeadline("EXECUTE_DEADLINE_MS"),
      verifyMs: callDeadline("VERIFY_DEADLINE_MS"),
      settleMs: callDeadline("SETTLE_DEADLINE_MS"),
    },
    leaseMaxUnits: Math.max(1, ENV.int("LEASE_MAX_UNITS")),
    leaseBookMaxKeys: Math.max(1, ENV.int("LEASE_BOOK_MAX_KEYS")),
    unknownKeys: {
      perSecond: Math.max(0, ENV.int("UNKNOWN_KEYS_PER_CLIENT_PER_SECOND")),
      burst: Math.max(1, ENV.int("UNKNOWN_KEYS_PER_CLIENT_BURST")),
    },
    earlyCallTrustMs: Math.max(0, ENV.int("EARLY_CALL_TRUST_MS")),
    rpcSendRawTransaction: ENV.bool("RPC_SEND_RAW_TRANSACTION"),
    usageBatch: {
      maxRecords: ENV.int("USAGE_BATCH_MAX"),
      maxDelayMs: ENV.int("USAGE_BATCH_DELAY_MS"),
    },
    trustProxy: parseTrustProxy(ENV.string("TRUST_PROXY")),
    accessLog: ENV.bool("ACCESS_LOG"),
    meshToken: readMeshToken(),
  };
}

/** The environment table's deadline variables (`*_DEADLINE_MS`). */
type DeadlineVar = Extract<Parameters<typeof ENV.int>[0], `${string}_DEADLINE_MS`>;

/** A gRPC call's deadline: a longer one could outlast the grace a server gives a connection it ends. */
function callDeadline(name: DeadlineVar): number {
  const ms = ENV.int(name);
  if (ms < 1 || ms > EXCHANGE_CALL_MAX_MS)
    throw new ConfigError(`${name} must be between 1 and ${EXCHANGE_CALL_MAX_MS} ms, got ${ms}`);
  return ms;
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
