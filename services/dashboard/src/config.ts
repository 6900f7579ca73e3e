import { ConfigError, clusterNodesOf, parseTrustProxy, readMeshToken } from "@tollgate/platform";
import { ENV } from "./env.ts";

export const SERVICE = "dashboard";

/** The dashboard's configuration, read once at start (main.ts) and passed in. */
export interface DashboardConfig {
  host: string;
  /** HTTP port of the pages and the JSON API (0 = any free port). */
  port: number;
  metricsPort: number;
  /**
   * The origin users reach the dashboard at (scheme, host, port; no path). Sign-in messages are
   * bound to its host and URI, and state-changing calls from any other Origin are refused. Unset:
   * http://127.0.0.1:<bound port> (the local run).
   */
  publicUrl: string | undefined;
  quotaMeterAddr: string;
  /** settlement-worker (SettlementAccountService: the signed-in wallet's own payments). */
  settlementWorkerAddr: string;
  /** The gateway's public origin, where the credits page's top-up is paid; unset: no button. */
  gatewayUrl: string | undefined;
  /** CAIP-2 ids of payment chains without a public explorer (named "… (local)", no links). */
  localChains: readonly string[];
  /** The dashboard's mesh token (quota-meter accepts it by its digest, for AccountService only). */
  meshToken: string;
  redisUrl: string;
  /** REDIS_CLUSTER_NODES: a Redis Cluster instead of REDIS_URL's Redis. */
  redisClusterNodes: string[];
  /** Prefix of every Redis key written (nonces, sessions). */
  redisPrefix: string;
  /** Use an in-memory store when Redis is unreachable at start (single replica; `pnpm start`). */
  redisStandIn: boolean;
  redisConnectTimeoutMs: number;
  /** Whether a first sign-in creates an account (the operator's switch). */
  signUpOpen: boolean;
  /** The EIP-155 chain sign-in messages name, where contract-wallet signatures are checked. */
  chainId: number;
  /** A node of that chain, for EIP-1271 / ERC-6492 signatures; unset: wallet keys (EOA) only. */
  chainRpcUrl: string | undefined;
  /** How long a sign-in message (and its nonce) is valid. */
  nonceTtlMs: number;
  /** Sign-in messages one client address may ask for per minute. */
  noncesPerMinute: number;
  /** Accounts first sign-ins from one client address may create per hour (0 = no limit). */
  signUpsPerHour: number;
  /** Express's `trust proxy`: which X-Forwarded-For hops name the client. */
  trustProxy: number | string[];
  /** How long a session lasts (absolute: no sliding renewal). */
  sessionTtlMs: number;
  grpcDeadlineMs: number;
}

function publicUrl(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const url = URL.parse(value);
  if (!url || !["http:", "https:"].includes(url.protocol) || url.pathname !== "/" || url.search || url.hash) {
    throw new ConfigError(`DASHBOARD_PUBLIC_URL must be an http(s) origin without a path, got "${value}"`);
  }
  return url.origin;
}

function gatewayUrl(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const url = URL.parse(value);
  if (!url || !["http:", "https:"].includes(url.protocol) || url.pathname !== "/" || url.search || url.hash) {
    throw new ConfigError(`GATEWAY_URL must be an http(s) origin without a path, got "${value}"`);
  }
  return url.origin;
}

function localChains(value: string | undefined): string[] {
  const ids = (value ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const id of ids) {
    if (!/^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/.test(id))
      throw new ConfigError(`LOCAL_CHAINS must list CAIP-2 chain ids (eip155:84532), got "${id}"`);
  }
  return ids;
}

function signUp(): boolean {
  const value = ENV.string("SIGN_UP").toLowerCase();
  if (value !== "open" && value !== "closed") {
    throw new ConfigError(`SIGN_UP must be "open" or "closed", got "${value}"`);
  }
  return value === "open";
}

export function loadConfig(): DashboardConfig {
  const chainId = ENV.int("SIWE_CHAIN_ID");
  if (chainId < 1) throw new ConfigError("SIWE_CHAIN_ID must be a positive chain id");
  return {
    host: ENV.string("BIND_HOST"),
    port: ENV.int("PORT"),
    metricsPort: ENV.int("METRICS_PORT"),
    publicUrl: publicUrl(ENV.raw("DASHBOARD_PUBLIC_URL")),
    quotaMeterAddr: ENV.string("QUOTA_METER_ADDR"),
    settlementWorkerAddr: ENV.string("SETTLEMENT_WORKER_ADDR"),
    gatewayUrl: gatewayUrl(ENV.raw("GATEWAY_URL")),
    localChains: localChains(ENV.raw("LOCAL_CHAINS")),
    meshToken: readMeshToken(),
    redisUrl: ENV.secret("REDIS_URL") ?? "",
    redisClusterNodes: clusterNodesOf(ENV.string("REDIS_CLUSTER_NODES")),
    // The deployment's one namespace; the dashboard's keys under its own part of it.
    redisPrefix: `${ENV.string("REDIS_PREFIX")}dashboard:`,
    redisStandIn: ENV.bool("REDIS_STANDIN"),
    redisConnectTimeoutMs: ENV.int("REDIS_CONNECT_TIMEOUT_MS"),
    signUpOpen: signUp(),
    chainId,
    chainRpcUrl: ENV.secret("SIWE_RPC_URL"),
    nonceTtlMs: ENV.int("SIWE_NONCE_TTL_SECONDS") * 1000,
    noncesPerMinute: ENV.int("SIWE_NONCES_PER_MINUTE"),
    signUpsPerHour: ENV.int("SIGN_UPS_PER_HOUR"),
    trustProxy: parseTrustProxy(ENV.string("TRUST_PROXY")),
    sessionTtlMs: ENV.int("SESSION_TTL_HOURS") * 3_600_000,
    grpcDeadlineMs: ENV.int("QUOTA_METER_DEADLINE_MS"),
  };
}
