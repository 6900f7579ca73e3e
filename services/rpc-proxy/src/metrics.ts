import { prom, type Registry, seriesOf } from "@tollgate/platform";
import type { BudgetLimit } from "./upstream/budget.ts";
import { INTEGRITY_CHECKS, type IntegrityCheck } from "./upstream/integrity.ts";

/** Breaker states as gauge values (rpc_proxy_upstream_breaker_state). */
export const BREAKER_GAUGE = { closed: 0, open: 1, half_open: 2 } as const;

/** The service's own metrics; gRPC server metrics come from startGrpcServer. */
export function createMetrics(registry: Registry) {
  const upstreamLabels = ["network", "upstream"] as const;
  const metrics = {
    upstreamLatency: new prom.Histogram({
      name: "rpc_proxy_upstream_request_duration_seconds",
      help: "Latency of HTTP requests to upstream nodes, by JSON-RPC method ('batch' for batches) and outcome",
      labelNames: ["network", "upstream", "method", "outcome"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    upstreamErrors: new prom.Counter({
      name: "rpc_proxy_upstream_errors_total",
      help: "Upstream requests that failed (timeout, connect_error, network_error, http_error, bad_response, rate_limited, breaker_open) or were answered with a JSON-RPC error (rpc_error)",
      labelNames: ["network", "upstream", "method", "outcome"],
      registers: [registry],
    }),
    upstreamHealthy: new prom.Gauge({
      name: "rpc_proxy_upstream_healthy",
      help: "1 when the upstream is in rotation (rpc_proxy_upstream_cordoned says why not)",
      labelNames: upstreamLabels,
      registers: [registry],
    }),
    breakerState: new prom.Gauge({
      name: "rpc_proxy_upstream_breaker_state",
      help: "Circuit breaker state per upstream: 0 closed, 1 open, 2 half-open",
      labelNames: upstreamLabels,
      registers: [registry],
    }),
    headBlock: new prom.Gauge({
      name: "rpc_proxy_upstream_head_block",
      help: "Last head block number seen on the upstream",
      labelNames: upstreamLabels,
      registers: [registry],
    }),
    lagBlocks: new prom.Gauge({
      name: "rpc_proxy_upstream_lag_blocks",
      help: "Blocks the upstream is behind the network's consistent head",
      labelNames: upstreamLabels,
      registers: [registry],
    }),
    consensusHead: new prom.Gauge({
      name: "rpc_proxy_consensus_head",
      help: "The network's consistent head: the highest block at least half (rounded up) of its polled upstreams reached, never lowered; `latest` reads are pinned to it",
      labelNames: ["network"],
      registers: [registry],
    }),
    cordoned: new prom.Gauge({
      name: "rpc_proxy_upstream_cordoned",
      help: "1 when the upstream is out of rotation for this reason: wrong_chain, unreachable, breaker_open, disagreed (with a quorum), integrity (an answer failed an integrity check), lagging, stalled",
      labelNames: ["network", "upstream", "reason"],
      registers: [registry],
    }),
    quorum: new prom.Counter({
      name: "rpc_proxy_quorum_total",
      help: "Quorum reads (CONSENSUS_<NETWORK>) by outcome: agreed (served), disagreement (502 upstream_disagreement), unavailable (too few upstreams in rotation or answering)",
      labelNames: ["network", "outcome"],
      registers: [registry],
    }),
    disagreements: new prom.Counter({
      name: "rpc_proxy_upstream_disagreements_total",
      help: "Quorum answers of the upstream that differed from the k agreeing ones (each cordons it for UPSTREAM_CORDON_MS)",
      labelNames: ["network", "upstream"],
      registers: [registry],
    }),
    integrityFailures: new prom.Counter({
      name: "rpc_proxy_upstream_integrity_failures_total",
      help: "Answers of the upstream that failed an integrity check (shape, answer_mismatch, block_hash, parent_hash, receipt_block_hash, log_block_hash, tx_hash): never served, the upstream cordoned for UPSTREAM_CORDON_MS, the read sent to another",
      labelNames: ["network", "upstream", "check"],
      registers: [registry],
    }),
    budgetSkips: new prom.Counter({
      name: "rpc_proxy_upstream_budget_skips_total",
      help: "Times the upstream was passed over for being out of its budget (UPSTREAM_LIMITS_<NETWORK>): limit 'rate' (requests/s) or 'month'",
      labelNames: ["network", "upstream", "limit"],
      registers: [registry],
    }),
    monthCalls: new prom.Gauge({
      name: "rpc_proxy_upstream_month_calls",
      help: "Node calls to the upstream this calendar month (UTC) by this replica, for upstreams with a budget (UPSTREAM_LIMITS_<NETWORK>)",
      labelNames: ["network", "upstream"],
      registers: [registry],
    }),
    hedges: new prom.Counter({
      name: "rpc_proxy_hedges_total",
      help: "Hedged reads by the upstream that was slow: 'sent' (a second upstream asked), 'won' (the second's answer served, the slow attempt cancelled), 'suppressed' (slow, but over the hedge budget)",
      labelNames: ["network", "upstream", "outcome"],
      registers: [registry],
    }),
    operations: new prom.Counter({
      name: "rpc_proxy_operations_total",
      help: "Operations executed, by operation, network and result code ('ok' or a catalog error code)",
      labelNames: ["operation", "network", "code"],
      registers: [registry],
    }),
    roundTrips: new prom.Counter({
      name: "rpc_proxy_operation_round_trips_total",
      help: "Upstream HTTP round trips spent by operations",
      labelNames: ["operation", "network"],
      registers: [registry],
    }),
  };
  const upstreamCall = ["network", "upstream", "method", "outcome"] as const;
  return {
    ...metrics,
    // The series each call touches, found without prom-client hashing a label object per call.
    upstreamLatencyOf: seriesOf(metrics.upstreamLatency, upstreamCall),
    upstreamErrorsOf: seriesOf(metrics.upstreamErrors, upstreamCall),
    hedgesOf: seriesOf(metrics.hedges, ["network", "upstream", "outcome"] as const),
    integrityFailuresOf: seriesOf(metrics.integrityFailures, ["network", "upstream", "check"] as const),
    budgetSkipsOf: seriesOf(metrics.budgetSkips, ["network", "upstream", "limit"] as const),
    quorumOf: seriesOf(metrics.quorum, ["network", "outcome"] as const),
    disagreementsOf: seriesOf(metrics.disagreements, ["network", "upstream"] as const),
    operationsOf: seriesOf(metrics.operations, ["operation", "network", "code"] as const),
    roundTripsOf: seriesOf(metrics.roundTrips, ["operation", "network"] as const),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

type Counted = { inc(value?: number): void };

/** One upstream's series that the pool's hot path may touch, found once. */
export interface UpstreamSeries {
  hedges: { sent: Counted; won: Counted; suppressed: Counted };
  skips: Record<BudgetLimit, Counted>;
  integrity: Record<IntegrityCheck, Counted>;
}

/** Every series from the start (0): dashboards and alerts read them as rates. */
export function upstreamSeries(metrics: Metrics, network: string, upstream: string): UpstreamSeries {
  const labels = { network, upstream };
  const hedge = (outcome: string) => metrics.hedgesOf({ ...labels, outcome });
  const skip = (limit: string) => metrics.budgetSkipsOf({ ...labels, limit });
  const series: UpstreamSeries = {
    hedges: { sent: hedge("sent"), won: hedge("won"), suppressed: hedge("suppressed") },
    skips: { rate: skip("rate"), month: skip("month") },
    integrity: Object.fromEntries(
      INTEGRITY_CHECKS.map((check) => [check, metrics.integrityFailuresOf({ ...labels, check })]),
    ) as Record<IntegrityCheck, Counted>,
  };
  for (const group of [series.hedges, series.skips, series.integrity])
    for (const counter of Object.values(group)) counter.inc(0);
  return series;
}
