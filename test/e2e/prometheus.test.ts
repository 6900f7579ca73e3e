// Tollgate's dashboards and alerting rules against a real Prometheus server (Debian's 2.42, on
// loopback, one-second scrapes) scraping a mesh of its own over the shared devnets. The third
// network's only upstream is a proxy this file controls, so an upstream can be killed. Traffic:
// API-key calls, bad input, a bad key, a challenge, a revert, an internal call without a mesh token,
// an x402 `exact` call paid with the official client, its replay, and calls that fail once the
// upstream is gone. Then: the recording
// rules produce series, the upstream-down alert goes pending, and every panel query of every
// dashboard (its variables set to "All") returns at least one series. (No Grafana server can run
// here; the dashboards' schema is checked in test/observability/dashboards.test.ts.)

import { type Mesh, meshAdmin } from "@tollgate/local";
import { contracts, createClient, grpc } from "@tollgate/platform";
import { toFunctionSelector } from "viem";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { CountingProxy } from "../support/counting-proxy.ts";
import { devnet, sharedSettlementEnv } from "../support/devnet.ts";
import {
  allRules,
  dashboardFiles,
  metricNames,
  panelQueries,
  RULES_FILE,
  recordingRules,
  substitute,
} from "../support/observability.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { type Prometheus, startPrometheus } from "../support/prometheus.ts";
import { x402Payer } from "../support/x402.ts";

const shared = inject("mesh");
const third = Object.keys(devnet.chains).find((n) => !["ethereum", "sepolia", "settlement"].includes(n))!;
const envName = (network: string) => `UPSTREAMS_${network.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;

let mesh: Mesh;
let prometheus: Prometheus;
let upstream: CountingProxy;
let apiKey: string;

const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${mesh.gatewayUrl}${path}`, { headers });
const bearer = () => ({ Authorization: `Bearer ${apiKey}` });
const poll = { timeout: 20_000, interval: 250 };

beforeAll(async () => {
  upstream = await new CountingProxy(devnet.chains[third]!.rpcUrl).listen();
  mesh = await startOwnMesh({
    stateDir: shared.stateDir,
    namespace: `prom${process.pid}`,
    env: {
      LOG_LEVEL: "warn",
      REDIS_BUDGET_MS: "2000",
      UPSTREAM_HEAD_POLL_MS: "200",
      [envName("ethereum")]: devnet.chains.ethereum!.rpcUrl,
      [envName("sepolia")]: devnet.chains.sepolia!.rpcUrl,
      [envName(third)]: upstream.url("/"),
    },
    // No devnet of its own: payments settle on the shared devnet's chain, with a facilitator
    // account of its own.
    serviceEnv: { "payment-verifier": sharedSettlementEnv("spare2") },
  });
  prometheus = await startPrometheus({
    targets: Object.fromEntries(
      Object.entries(mesh.ports).map(([name, p]) => [name, `127.0.0.1:${p.metrics}`]),
    ),
    ruleFiles: [RULES_FILE],
  });
  const admin = meshAdmin(mesh);
  apiKey = (await admin.quickstart("prometheus")).secret;
  admin.close();
}, 120_000);

afterAll(async () => {
  await prometheus?.stop();
  await mesh?.stop();
  await upstream?.close();
});

describe("dashboards and alerts against a real Prometheus scraping a running mesh", () => {
  it("scrapes every service and sees the traffic it is sent", async () => {
    await vi.waitFor(async () => {
      const up = await prometheus.query("up");
      expect(up.map((s) => `${s.metric.job}=${s.value[1]}`).sort()).toEqual(
        Object.keys(mesh.ports)
          .map((job) => `${job}=1`)
          .sort(),
      );
    }, poll);

    // API-key calls on every network, a revert (a node's JSON-RPC error), bad input, a bad key,
    // an unknown path and a challenge.
    for (const network of ["ethereum", "sepolia"]) {
      expect((await get(`/api/chain/block-number?network=${network}`, bearer())).status).toBe(200);
    }
    expect((await get(`/api/chain/network-info?network=${third}`, bearer())).status).toBe(200);
    const revert = await fetch(`${mesh.gatewayUrl}/api/chain/call`, {
      method: "POST",
      headers: { ...bearer(), "Content-Type": "application/json" },
      body: JSON.stringify({
        to: devnet.chains.ethereum!.contracts.reverter,
        data: toFunctionSelector("alwaysReverts()"),
      }),
    });
    expect(revert.status).toBe(422);
    expect((await get("/api/chain/block/not-a-block", bearer())).status).toBe(400);
    expect((await get("/api/chain/block-number", { Authorization: "Bearer tg_live_nope" })).status).toBe(401);
    expect((await get("/api/chain/nothing-here")).status).toBe(404);
    expect((await get("/api/chain/block-number")).status).toBe(402);

    // An internal call without a mesh token: refused before its handler runs.
    const intruder = createClient(
      contracts.quotaMeter().QuotaMeterService,
      `127.0.0.1:${mesh.ports["quota-meter"].main}`,
      { service: "quota-meter", token: undefined, defaultDeadlineMs: 5_000 },
    );
    await expect(
      intruder.call("Authorize", {
        requestId: "no-token",
        apiKey,
        endpoint: "/api/chain/block-number",
        network: "ethereum",
      }),
    ).rejects.toMatchObject({ failure: { grpcCode: grpc.status.UNAUTHENTICATED } });
    intruder.close();

    // An x402 `exact` payment with the official client, then the same payment again (a replay).
    const payer = x402Payer(devnet, "payer7");
    const paid = await payer.fetch(`${mesh.gatewayUrl}/api/chain/block-number`);
    expect(paid.status).toBe(200);
    const replay = await get("/api/chain/block-number", { "Payment-Signature": payer.paid[0]!.signature });
    expect(replay.status).toBe(402);

    await vi.waitFor(async () => {
      const byAuth = await prometheus.query(
        'sum by (auth) (http_request_duration_seconds_count{endpoint=~"/api/.+"})',
      );
      expect(byAuth.map((s) => s.metric.auth)).toEqual(expect.arrayContaining(["api_key", "exact", "none"]));
    }, poll);
  });

  it("evaluates every recording rule into a series", async () => {
    await vi.waitFor(async () => {
      const missing: string[] = [];
      for (const rule of recordingRules()) {
        if ((await prometheus.query(rule.record!)).length === 0) missing.push(rule.record!);
      }
      expect(missing, "recording rules without a series").toEqual([]);
    }, poll);
    // rate() sees only increments between two scrapes: keep API-key calls coming until the SLO
    // ratios are numbers. Nothing has answered 5xx: the error ratio is 0 (not absent, not NaN).
    await vi.waitFor(async () => {
      expect((await get("/api/chain/block-number", bearer())).status).toBe(200);
      const [errors] = await prometheus.query("tollgate:api_availability_errors:ratio_rate5m");
      expect(errors?.value[1]).toBe("0");
      const [slow] = await prometheus.query("tollgate:api_latency_slow:ratio_rate5m");
      expect(Number(slow?.value[1])).toBeGreaterThanOrEqual(0);
      expect(Number(slow?.value[1])).toBeLessThan(0.5);
    }, poll);
  });

  it("puts TollgateUpstreamDown in pending when the only upstream of a network is killed", async () => {
    const downAlerts = async () =>
      (await prometheus.alerts()).filter((a) => a.labels.alertname === "TollgateUpstreamDown");
    // Healthy first, as Prometheus sees it, and no alert (rpc-proxy starts every upstream at 0
    // until its first head poll, so an early evaluation may have left one pending).
    await vi.waitFor(async () => {
      const [healthy] = await prometheus.query(`rpc_proxy_upstream_healthy{upstream="${third}-0"}`);
      expect(healthy?.value[1]).toBe("1");
      expect(await downAlerts()).toEqual([]);
    }, poll);

    await upstream.close();

    await vi.waitFor(async () => {
      expect(await downAlerts()).toEqual([
        expect.objectContaining({
          state: "pending",
          labels: expect.objectContaining({ network: third, upstream: `${third}-0`, severity: "warning" }),
        }),
      ]);
    }, poll);
    const unavailable = (await prometheus.alerts()).find(
      (a) => a.labels.alertname === "TollgateNetworkUnavailable",
    );
    expect(unavailable?.labels.network).toBe(third);

    // Calls on that network now fail: refunded (API key) and released (x402), never charged.
    expect((await get(`/api/chain/network-info?network=${third}`, bearer())).status).toBe(503);
    const payer = x402Payer(devnet, "payer7");
    expect((await payer.fetch(`${mesh.gatewayUrl}/api/chain/network-info?network=${third}`)).status).toBe(
      503,
    );
  });

  it("answers every panel query of every dashboard with at least one series (Prometheus evaluates them: no Grafana server can run here)", async () => {
    const queries = dashboardFiles().flatMap(({ dashboard }) =>
      panelQueries(dashboard).map((q) => ({ ...q, expr: substitute(q.expr, dashboard) })),
    );
    expect(queries.length).toBeGreaterThan(50);
    await vi.waitFor(async () => {
      const empty: string[] = [];
      for (const q of queries) {
        const result = await prometheus.query(q.expr);
        if (result.length === 0) empty.push(`${q.dashboard} / ${q.panel} / ${q.refId}: ${q.expr}`);
      }
      expect(empty, "panel queries without a series").toEqual([]);
    }, poll);
  });

  it("fills every dashboard variable from the metrics", async () => {
    for (const { dashboard } of dashboardFiles()) {
      for (const v of dashboard.templating.list.filter((x) => x.type === "query")) {
        const [, metric, label] = /^label_values\((\w+), (\w+)\)$/.exec(v.query!)!;
        const values = new Set((await prometheus.series(metric!)).map((s) => s[label!]).filter(Boolean));
        expect(values.size, `${dashboard.uid}: $${v.name}`).toBeGreaterThan(0);
      }
    }
  });

  it("reads only metrics the services export or the rules record, in every panel and every rule", async () => {
    // A family a service describes (HELP/TYPE) counts even before its first sample: payment-verifier
    // exports some rare-event counters only from their first event, and their panels fall back to 0.
    const families = Object.keys(await prometheus.metadata());
    const histogramSeries = families.flatMap((f) => [`${f}_bucket`, `${f}_count`, `${f}_sum`]);
    const known = new Set([...families, ...histogramSeries, ...(await prometheus.metricNames())]);
    expect(families).toContain("payment_facilitator_init_failures_total");
    const used = [
      ...dashboardFiles().flatMap(({ dashboard }) => panelQueries(dashboard).map((q) => q.expr)),
      ...allRules().map((r) => r.expr),
    ].flatMap(metricNames);
    expect(used).toContain("payment_facilitator_init_failures_total");
    expect([...new Set(used)].filter((name) => !known.has(name))).toEqual([]);
  });
});
