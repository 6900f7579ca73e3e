// rpc-proxy's environment, declared once: config.ts reads through it, the README table is rendered
// from it (pnpm gen:env) and the Kubernetes manifests are checked against it (test/k8s).
import { NETWORKS } from "@tollgate/catalog";
import { DEFAULT_PORTS, envTable, meshCallerRows, serviceEnv } from "@tollgate/platform";

/** `<NETWORK>` of a per-network name: the network name upper-cased, non-alphanumerics as `_`. */
const networkSuffix = (network: string) => network.toUpperCase().replace(/[^A-Z0-9]/g, "_");

/** `UPSTREAMS_<NETWORK>`. */
export function upstreamsEnvName(network: string): string {
  return `UPSTREAMS_${networkSuffix(network)}`;
}

/** `CONSENSUS_<NETWORK>`. */
export function consensusEnvName(network: string): string {
  return `CONSENSUS_${networkSuffix(network)}`;
}

/** `UPSTREAM_LIMITS_<NETWORK>`. */
export function limitsEnvName(network: string): string {
  return `UPSTREAM_LIMITS_${networkSuffix(network)}`;
}

export const ENV = envTable([
  ...serviceEnv(DEFAULT_PORTS["rpc-proxy"]),
  {
    name: "UPSTREAMS_<NETWORK>",
    names: NETWORKS.map((n) => upstreamsEnvName(n.name)),
    secret: true,
    description: `Comma-separated node URLs per network, in order of preference; the name is upper-cased with non-alphanumerics as \`_\` (${NETWORKS.map((n) => `\`${upstreamsEnvName(n.name)}\``).join(", ")}). Upstreams are labelled \`<network>-<index>\` in logs, metrics and ListNetworks; URLs (which may hold a key) are never shown. \`user:pass@\` in a URL becomes Basic auth.`,
  },
  {
    name: "CONSENSUS_<NETWORK>",
    names: NETWORKS.map((n) => consensusEnvName(n.name)),
    description: `Quorum reads per network: \`<method>[,<method>…]:<k>of<n>\` (e.g. \`CONSENSUS_ETHEREUM=eth_call,eth_getBalance,eth_getLogs:2of3\`). A call of those node methods, from a REST endpoint or \`/rpc\`, is sent to n upstreams in rotation at the same pinned block and answered only when k answers are the same; an upstream that disagrees with the k is cordoned (\`UPSTREAM_CORDON_MS\`); no k alike is 502 \`upstream_disagreement\`, not charged. Unset: one upstream answers. k is more than half of n (two answers can never both have k), n from 2 to the network's upstreams; write methods and \`eth_blockNumber\` (it answers the consistent head) cannot be listed.`,
  },
  {
    name: "UPSTREAM_LIMITS_<NETWORK>",
    names: NETWORKS.map((n) => limitsEnvName(n.name)),
    description: `Per-upstream call budgets, one comma-separated entry per URL of \`UPSTREAMS_<NETWORK>\` in its order: \`<n>/s\` (a provider's rate limit: a token bucket of one second's calls), \`<n>/month\` (its monthly allowance, UTC month, counted per replica since it started), both as \`<n>/s+<n>/month\`, or empty / \`-\` (none; missing entries too), e.g. \`UPSTREAM_LIMITS_ETHEREUM=25/s,10/s+3000000/month,-\`. An upstream out of budget is passed over for the others (\`rpc_proxy_upstream_budget_skips_total\`); none within budget is 503 \`upstream_unavailable\`, not charged. Head polls count but are never skipped.`,
  },
  {
    name: "UPSTREAM_TIMEOUT_MS",
    default: "2500",
    description:
      "Timeout of one HTTP attempt (never beyond the caller's gRPC deadline; attempts in flight are checked every 10 ms).",
  },
  {
    name: "UPSTREAM_REQUEST_TIMEOUT_MS",
    default: "10000",
    description: "Budget of an operation when the caller sets no deadline.",
  },
  {
    name: "UPSTREAM_MAX_ATTEMPTS",
    default: "3",
    description:
      "Attempts per read operation, spread over the healthy upstreams (failover first, then retries with exponential backoff and full jitter). A write is sent once, to one node (Writes, below).",
  },
  {
    name: "UPSTREAM_BACKOFF_BASE_MS",
    default: "50",
    description: "Backoff before re-trying an upstream already tried in the same operation…",
  },
  { name: "UPSTREAM_BACKOFF_MAX_MS", default: "1000", description: "… and its cap." },
  {
    name: "UPSTREAM_HEDGE_BUDGET_PERCENT",
    default: "10",
    description:
      "Hedged reads: a read still unanswered after its upstream's recent quantile (below) is also sent to another healthy upstream, the first answer served and the other attempt cancelled. Extra node calls stay within this share of reads (each read earns the share of a hedge, a hedge spends one); `0` turns hedging off. Writes are never hedged.",
  },
  {
    name: "UPSTREAM_HEDGE_QUANTILE",
    default: "90",
    description:
      "The percentile of the serving upstream's own last 64 answers of the same method class (plain read, eth_call, eth_getLogs, batch) after which a read is hedged; none before 16 answers.",
  },
  {
    name: "UPSTREAM_BREAKER_THRESHOLD",
    default: "3",
    description:
      "Consecutive transport failures (connect, timeout, HTTP error, unreadable answer) that open a URL's circuit breaker. JSON-RPC errors (reverts…) do not count.",
  },
  {
    name: "UPSTREAM_BREAKER_COOLDOWN_MS",
    default: "5000",
    description: "Time an open breaker rejects calls; then one probe (half-open) decides.",
  },
  {
    name: "UPSTREAM_HEAD_POLL_MS",
    default: "2000",
    description:
      "Background `eth_blockNumber` poll per upstream: health, head, lag; the polls are also the half-open probes.",
  },
  {
    name: "UPSTREAM_MAX_LAG_BLOCKS",
    default: "5",
    description:
      "Blocks behind the consistent head (the highest block a majority of the upstreams in rotation reached) before an upstream leaves the rotation.",
  },
  {
    name: "UPSTREAM_STALL_MS",
    default: "30000",
    description:
      "An upstream whose head has not moved for this long while it is behind the consistent head is stalled: out of rotation until its head moves.",
  },
  {
    name: "UPSTREAM_CORDON_MS",
    default: "60000",
    description:
      "How long an upstream that disagreed with a quorum (`CONSENSUS_<NETWORK>`) stays out of rotation: it serves nothing and counts in no quorum meanwhile.",
  },
  {
    name: "UPSTREAM_CONNECTIONS",
    default: "64",
    description: "Keep-alive connections per URL (undici Pool).",
  },
  {
    name: "UPSTREAM_VERIFY_CHAIN_ID",
    default: "true",
    description: "First poll checks `eth_chainId`; a URL on the wrong chain is never used.",
  },
  {
    name: "UPSTREAM_MAX_BODY_BYTES",
    default: "16777216",
    description:
      "Largest answer read from a node, counted as it streams in (never buffered whole first); more is `result_too_large`, not retried elsewhere, not a breaker failure.",
  },
  {
    name: "MAX_RESULT_BYTES",
    default: "4000000",
    description: "Largest `data` answered to the gateway (the gRPC hop); more is `result_too_large`.",
  },
  {
    name: "LOGS_MAX_BLOCK_RANGE",
    default: "10000",
    description: "Largest span of `events` / `erc20-transfers`; more is `block_range_too_large`.",
  },
  {
    name: "LOGS_DEFAULT_BLOCK_RANGE",
    default: "1000",
    description: "Missing `to_block` = `latest`; missing `from_block` = `to_block` − 1000 + 1 (not below 0).",
  },
  {
    name: "ENS_UNIVERSAL_RESOLVER",
    default: "0xeeeeeeee14d718c2b47d9923deab1335e144eeee",
    description: "ENS Universal Resolver (mainnet and Sepolia).",
  },
  ...meshCallerRows(["gateway"]),
]);
