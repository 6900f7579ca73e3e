import { NETWORKS, RPC_METHODS } from "@tollgate/catalog";
import { ConfigError, type MeshCallers, readMeshCallers, readSecret } from "@tollgate/platform";
import { getAddress } from "viem";
import { consensusEnvName, ENV, limitsEnvName, upstreamsEnvName } from "./env.ts";
import type { UpstreamLimit } from "./upstream/budget.ts";

/** One network's upstream node URLs, in the operator's order of preference. */
export interface NetworkConfig {
  name: string;
  chainId: number;
  upstreams: string[];
  /** Quorum reads (CONSENSUS_<NETWORK>): these node methods are answered only when k of n agree. */
  consensus?: ConsensusConfig;
  /** Per-upstream call budgets (UPSTREAM_LIMITS_<NETWORK>), in the order of `upstreams`. */
  limits?: (UpstreamLimit | undefined)[];
}

interface ConsensusConfig {
  methods: string[];
  k: number;
  n: number;
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
  /** Hedged reads: at most this share of reads (in percent) gets a second node call; 0: off. */
  hedgeBudgetPercent: number;
  /** The percentile of an upstream's recent answers after which a read is hedged. */
  hedgeQuantile: number;
  /** Consecutive failures that open an upstream's circuit breaker. */
  breakerThreshold: number;
  /** How long an open breaker rejects calls before letting one probe through (half-open). */
  breakerCooldownMs: number;
  /** Head-block polling interval (eth_blockNumber), which also probes open breakers. */
  headPollMs: number;
  /** Blocks behind the consistent head after which an upstream leaves the rotation. */
  maxLagBlocks: number;
  /** Keep-alive connections per upstream URL. */
  connections: number;
  /** Largest response body read from a node, counted as it streams in; more is result_too_large. */
  maxBodyBytes: number;
  /** Refuse upstreams whose eth_chainId differs from the catalog's chain id. */
  verifyChainId: boolean;
  /** A head unmoved this long while behind the consistent head: the upstream is stalled. */
  stallMs: number;
  /** How long an upstream that disagreed with a quorum stays out of rotation. */
  cordonMs: number;
}

/**
 * `<method>[,<method>…]:<k>of<n>`: read methods of the catalog (a write is sent once, never to a
 * quorum; eth_blockNumber answers the consistent head), n/2 < k <= n, 2 <= n <= the network's upstreams.
 */
function parseConsensus(
  value: string | undefined,
  name: string,
  upstreams: number,
): ConsensusConfig | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  const match = /^\s*([a-zA-Z0-9_,\s]+):\s*(\d+)\s*of\s*(\d+)\s*$/.exec(value);
  if (!match) throw new ConfigError(`${name} must read <method>[,<method>…]:<k>of<n>, got "${value}"`);
  const methods = match[1]!
    .split(",")
    .map((m) => m.trim())
    .filter((m) => m !== "");
  const k = Number(match[2]);
  const n = Number(match[3]);
  for (const method of methods) {
    if (!Object.hasOwn(RPC_METHODS, method))
      throw new ConfigError(`${name}: ${method} is not a read method rpc-proxy serves`);
    // It answers the consistent head (README, Consistent head): nodes at other heights never agree.
    if (method === "eth_blockNumber")
      throw new ConfigError(`${name}: eth_blockNumber answers the consistent head, it takes no quorum`);
  }
  if (methods.length === 0) throw new ConfigError(`${name} names no method`);
  // More than half: two different answers can never both have k.
  if (n < 2 || k * 2 <= n || k > n)
    throw new ConfigError(`${name}: k must be more than half of n (n at least 2), got ${k}of${n}`);
  if (n > upstreams)
    throw new ConfigError(`${name}: a ${k}of${n} quorum needs ${n} upstreams, ${upstreams} configured`);
  return { methods, k, n };
}

const ENTRY = /^(?:(\d+(?:\.\d+)?)\/s)?(?:(?:^|\+)(\d+)\/month)?$/;

/**
 * `UPSTREAM_LIMITS_<NETWORK>`: one entry per URL of `UPSTREAMS_<NETWORK>`, in its order, comma
 * separated; an entry is `<n>/s`, `<n>/month`, `<n>/s+<n>/month`, or empty / `-` (no limit). Fewer
 * entries than URLs leave the last URLs unlimited.
 */
function parseLimits(
  value: string | undefined,
  name: string,
  upstreams: number,
): (UpstreamLimit | undefined)[] | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  const entries = value.split(",").map((e) => e.trim());
  if (entries.length > upstreams)
    throw new ConfigError(`${name} has ${entries.length} entries for ${upstreams} upstream URLs`);
  return entries.map((entry, i) => {
    if (entry === "" || entry === "-") return undefined;
    const match = ENTRY.exec(entry.replace(/\s+/g, ""));
    const perSecond = match?.[1] === undefined ? undefined : Number(match[1]);
    const perMonth = match?.[2] === undefined ? undefined : Number(match[2]);
    if (!match || (perSecond === undefined && perMonth === undefined) || perSecond === 0 || perMonth === 0)
      throw new ConfigError(
        `${name}: entry ${i + 1} must read <n>/s, <n>/month or <n>/s+<n>/month (n > 0), or - for none; got "${entry}"`,
      );
    return {
      ...(perSecond === undefined ? {} : { perSecond }),
      ...(perMonth === undefined ? {} : { perMonth }),
    };
  });
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

/** One network's settings from its URLs and its CONSENSUS_ and UPSTREAM_LIMITS_ values (unset: none). */
export function networkConfig(
  network: { name: string; chainId: number },
  upstreams: string[],
  values: { consensus?: string | undefined; limits?: string | undefined },
): NetworkConfig {
  const count = upstreams.length;
  const consensus = parseConsensus(values.consensus, consensusEnvName(network.name), count);
  const limits = parseLimits(values.limits, limitsEnvName(network.name), count);
  return {
    name: network.name,
    chainId: network.chainId,
    upstreams,
    ...(consensus ? { consensus } : {}),
    ...(limits ? { limits } : {}),
  };
}

export function loadConfig(): RpcProxyConfig {
  return {
    host: ENV.string("BIND_HOST"),
    grpcPort: ENV.int("GRPC_PORT"),
    metricsPort: ENV.int("METRICS_PORT"),
    networks: NETWORKS.map((n) => {
      // Node URLs often carry a provider key: read as secrets (also from UPSTREAMS_<NETWORK>_FILE).
      const upstreams = parseUrls(readSecret(upstreamsEnvName(n.name)), upstreamsEnvName(n.name));
      return networkConfig(n, upstreams, {
        consensus: process.env[consensusEnvName(n.name)],
        limits: process.env[limitsEnvName(n.name)],
      });
    }),
    upstream: {
      timeoutMs: ENV.int("UPSTREAM_TIMEOUT_MS"),
      requestTimeoutMs: ENV.int("UPSTREAM_REQUEST_TIMEOUT_MS"),
      maxAttempts: Math.max(1, ENV.int("UPSTREAM_MAX_ATTEMPTS")),
      backoffBaseMs: ENV.int("UPSTREAM_BACKOFF_BASE_MS"),
      backoffMaxMs: ENV.int("UPSTREAM_BACKOFF_MAX_MS"),
      hedgeBudgetPercent: Math.min(100, Math.max(0, ENV.int("UPSTREAM_HEDGE_BUDGET_PERCENT"))),
      hedgeQuantile: Math.min(99, Math.max(1, ENV.int("UPSTREAM_HEDGE_QUANTILE"))),
      breakerThreshold: Math.max(1, ENV.int("UPSTREAM_BREAKER_THRESHOLD")),
      breakerCooldownMs: ENV.int("UPSTREAM_BREAKER_COOLDOWN_MS"),
      headPollMs: Math.max(100, ENV.int("UPSTREAM_HEAD_POLL_MS")),
      maxLagBlocks: ENV.int("UPSTREAM_MAX_LAG_BLOCKS"),
      connections: Math.max(1, ENV.int("UPSTREAM_CONNECTIONS")),
      maxBodyBytes: Math.max(1024, ENV.int("UPSTREAM_MAX_BODY_BYTES")),
      verifyChainId: ENV.bool("UPSTREAM_VERIFY_CHAIN_ID"),
      stallMs: ENV.int("UPSTREAM_STALL_MS"),
      cordonMs: ENV.int("UPSTREAM_CORDON_MS"),
    },
    logs: {
      maxBlockRange: Math.max(1, ENV.int("LOGS_MAX_BLOCK_RANGE")),
      defaultBlockRange: Math.max(1, ENV.int("LOGS_DEFAULT_BLOCK_RANGE")),
    },
    maxResultBytes: Math.max(1024, ENV.int("MAX_RESULT_BYTES")),
    // Where viem's mainnet and sepolia chain objects place it.
    ensUniversalResolver: getAddress(ENV.string("ENS_UNIVERSAL_RESOLVER")),
    meshCallers: readMeshCallers(["gateway"]),
  };
}
