import { NETWORKS } from "@tollgate/catalog";
import {
  bindHost,
  ConfigError,
  envBool,
  envInt,
  envString,
  type MeshCallers,
  readMeshCallers,
  readSecret,
} from "@tollgate/platform";
import { getAddress } from "viem";

/** One network's upstream node URLs, in the operator's order of preference. */
export interface NetworkConfig {
  name: string;
  chainId: number;
  upstreams: string[];
}

export interface RpcProxyConfig {
  host: string;
  grpcPort: number;
  metricsPort: number;
  networks: NetworkConfig[];
  upstream: UpstreamPolicyConfig;
  logs: { maxBlockRange: number; defaultBlockRange: number };
  /** Largest data_json answered; gRPC clients refuse messages over 4 MiB by default. */
  maxResultBytes: number;
  /** ENS Universal Resolver (same address on mainnet and Sepolia). */
  ensUniversalResolver: `0x${string}`;
  /** Mesh callers accepted (the gateway) and their token digests. */
  meshCallers: MeshCallers;
}

export interface UpstreamPolicyConfig {
  /** Timeout of one HTTP attempt. */
  timeoutMs: number;
  /** Budget of a whole operation when the caller sent no gRPC deadline. */
  requestTimeoutMs: number;
  /** Attempts per operation, first try included, spread over the network's upstreams. */
  maxAttempts: number;
  /** Exponential backoff with full jitter before re-trying an upstream already tried. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Consecutive failures that open an upstream's circuit breaker. */
  breakerThreshold: number;
  /** How long an open breaker rejects calls before letting one probe through (half-open). */
  breakerCooldownMs: number;
  /** Head-block polling interval (eth_blockNumber), which also probes open breakers. */
  headPollMs: number;
  /** Blocks behind the best upstream after which an upstream counts as unhealthy. */
  maxLagBlocks: number;
  /** Keep-alive connections per upstream URL. */
  connections: number;
  /** Largest response body read from a node, counted as it streams in; more is result_too_large. */
  maxBodyBytes: number;
  /** Refuse upstreams whose eth_chainId differs from the catalog's chain id. */
  verifyChainId: boolean;
}

/** `UPSTREAMS_<NETWORK>`: the network name upper-cased, non-alphanumerics as `_`. */
export function upstreamsEnvName(network: string): string {
  return `UPSTREAMS_${network.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
}

function parseUrls(value: string | undefined, name: string): string[] {
  if (!value) return [];
  return value
    .split(",")
    .map((url) => url.trim())
    .filter((url) => url !== "")
    .map((url) => {
      const parsed = URL.parse(url);
      // Never echo the value: node URLs often carry an API key.
      if (!parsed || !["http:", "https:"].includes(parsed.protocol)) {
        throw new ConfigError(`${name} holds an entry that is not an http(s) URL`);
      }
      return url;
    });
}

export function loadConfig(): RpcProxyConfig {
  return {
    host: bindHost(),
    grpcPort: envInt("GRPC_PORT", 50053),
    metricsPort: envInt("METRICS_PORT", 9463),
    networks: NETWORKS.map((n) => ({
      name: n.name,
      chainId: n.chainId,
      // Node URLs often carry a provider key: read as secrets (also from UPSTREAMS_<NETWORK>_FILE).
      upstreams: parseUrls(readSecret(upstreamsEnvName(n.name)), upstreamsEnvName(n.name)),
    })),
    upstream: {
      timeoutMs: envInt("UPSTREAM_TIMEOUT_MS", 2_500),
      requestTimeoutMs: envInt("UPSTREAM_REQUEST_TIMEOUT_MS", 10_000),
      maxAttempts: Math.max(1, envInt("UPSTREAM_MAX_ATTEMPTS", 3)),
      backoffBaseMs: envInt("UPSTREAM_BACKOFF_BASE_MS", 50),
      backoffMaxMs: envInt("UPSTREAM_BACKOFF_MAX_MS", 1_000),
      breakerThreshold: Math.max(1, envInt("UPSTREAM_BREAKER_THRESHOLD", 3)),
      breakerCooldownMs: envInt("UPSTREAM_BREAKER_COOLDOWN_MS", 5_000),
      headPollMs: Math.max(100, envInt("UPSTREAM_HEAD_POLL_MS", 2_000)),
      maxLagBlocks: envInt("UPSTREAM_MAX_LAG_BLOCKS", 5),
      connections: Math.max(1, envInt("UPSTREAM_CONNECTIONS", 64)),
      maxBodyBytes: Math.max(1024, envInt("UPSTREAM_MAX_BODY_BYTES", 16 * 1024 * 1024)),
      verifyChainId: envBool("UPSTREAM_VERIFY_CHAIN_ID", true),
    },
    logs: {
      maxBlockRange: Math.max(1, envInt("LOGS_MAX_BLOCK_RANGE", 10_000)),
      defaultBlockRange: Math.max(1, envInt("LOGS_DEFAULT_BLOCK_RANGE", 1_000)),
    },
    maxResultBytes: Math.max(1024, envInt("MAX_RESULT_BYTES", 4_000_000)),
    // Where viem's mainnet and sepolia chain objects place it.
    ensUniversalResolver: getAddress(
      envString("ENS_UNIVERSAL_RESOLVER", "0xeeeeeeee14d718c2b47d9923deab1335e144eeee"),
    ),
    meshCallers: readMeshCallers(["gateway"]),
  };
}
