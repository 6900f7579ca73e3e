/**
 * The mesh inside its pods' memory limits (`pnpm bench:memory`): the same load twice, once on a
 * mesh as `pnpm start` runs it and once with every service started inside a memory cgroup at the
 * limit its Kubernetes manifest sets (k8s/base/<service>.yaml; Node then sizes its heap from the
 * limit, as in a pod). For each service: the limit, peak resident memory each way (sampled every
 * 2 s), GC time (prom-client's nodejs_gc_duration_seconds), OOM kills and whether it survived; and
 * the throughput in limits against unconstrained.
 * Needs root and the cgroup v1 memory controller at /sys/fs/cgroup/memory (cgroup v2 machines: not
 * yet). Options: --minutes m of load per run (default 5), --connections n (32), --out file.json,
 * --node-options="…" (NODE_OPTIONS of every service in limits; by default each manifest's own),
 * --sources (the services from sources; by default from their bundles, as the images run them).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  type Mesh,
  meshAdmin,
  type ServiceName,
  startMesh,
  startPrivateNats,
  startPrivateRedis,
} from "@tollgate/local";
import { buildBundles } from "../support/bundles.ts";
import { manifestNodeOptions, POD_SERVICES, podCgroups } from "../support/pod-limits.ts";
import { load } from "./loader.ts";
import { residentMb } from "./proc.ts";

const SERVICES = POD_SERVICES;

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: {
    minutes: { type: "string", default: "5" },
    connections: { type: "string", default: "32" },
    out: { type: "string" },
    "node-options": { type: "string" },
    sources: { type: "boolean", default: false },
  },
});
const seconds = Math.round(Number(values.minutes) * 60);
const connections = Number(values.connections);

interface ServiceReport {
  peak_rss_mb: number;
  gc_seconds: number;
  alive: boolean;
  oom_kills?: number;
}

/** Seconds of GC a service has spent so far, from its own /metrics. */
async function gcSeconds(metricsPort: number): Promise<number> {
  const text = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then(
    (r) => r.text(),
    () => "",
  );
  let sum = 0;
  for (const line of text.split("\n"))
    if (line.startsWith("nodejs_gc_duration_seconds_sum")) sum += Number(line.split(" ").pop());
  return +sum.toFixed(2);
}

/** One run: a mesh (in cgroups when given), `seconds` of block-number load, what each service did. */
async function run(
  cgroups: Partial<Record<ServiceName, string>> | undefined,
  nodeOptions: Partial<Record<ServiceName, string>> = {},
) {
  const stateDir = mkdtempSync(join(tmpdir(), "tollgate-bench-memory-"));
  const [redis, nats] = await Promise.all([startPrivateRedis(), startPrivateNats()]);
  let mesh: Mesh | undefined;
  try {
    mesh = await startMesh({
      stateDir,
      onLine: (service, line) => process.stderr.write(`[${service}] ${line}\n`),
      env: {
        LOG_LEVEL: "warn",
        ACCESS_LOG: "false",
        REDIS_URL: redis.url,
        NATS_URL: nats.url,
      },
      serviceEnv: Object.fromEntries(
        Object.entries(nodeOptions).map(([service, flags]) => [service, { NODE_OPTIONS: flags }]),
      ),
      ...(cgroups ? { cgroups } : {}),
      bundles: !values.sources,
    });
    const running = mesh;
    const admin = meshAdmin(running);
    const { secret } = await admin.quickstart("bench-memory", { daily: 0, monthly: 0, burst: 1_000_000 });
    admin.close();
    const pids = Object.fromEntries(SERVICES.map((s) => [s, [running.services[s].child.pid ?? -1]]));
    const gcBefore = Object.fromEntries(
      await Promise.all(SERVICES.map(async (s) => [s, await gcSeconds(running.ports[s].metrics)] as const)),
    );
    const peak: Record<string, number> = residentMb(pids);
    const sampler = setInterval(() => {
      for (const [s, mb] of Object.entries(residentMb(pids))) peak[s] = Math.max(peak[s] ?? 0, mb);
    }, 2_000);
    const result = await load({
      url: `${running.gatewayUrl}/api/chain/block-number`,
      headers: { authorization: `Bearer ${secret}` },
      duration: seconds,
      connections,
    });
    clearInterval(sampler);
    const services: Record<string, ServiceReport> = {};
    for (const s of SERVICES) {
      const child = running.services[s].child;
      const alive = child.exitCode === null && child.signalCode === null;
      services[s] = {
        peak_rss_mb: peak[s] ?? 0,
        gc_seconds: alive
          ? +((await gcSeconds(running.ports[s].metrics)) - (gcBefore[s] ?? 0)).toFixed(2)
          : -1,
        alive,
      };
    }
    return {
      "req/s": Math.round(result.requests.average),
      "p99 ms": result.latency.p99,
      non2xx: result.non2xx + result.errors,
      // Which statuses, when some were not 2xx (autocannon counts them by code).
      statuses: Object.fromEntries(
        Object.entries(
          (result as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {},
        ).map(([code, { count }]) => [code, count]),
      ),
      services,
    };
  } finally {
    await mesh?.stop();
    await Promise.all([redis.process.stop(), nats.process.stop()]);
  }
}

// Both runs start the services as the images do, from their bundles (--sources: from sources).
if (!values.sources) buildBundles();
const pods = podCgroups("tollgate-bench");
const cgroups = pods.cgroups;
try {
  const unconstrained = await run(undefined);
  const killsBefore = pods.oomKills();
  // In limits, each service runs with its manifest's NODE_OPTIONS, or --node-options for all.
  const flags = values["node-options"];
  const inLimits = await run(
    cgroups,
    Object.fromEntries(
      SERVICES.flatMap((s) => {
        const f = flags ?? manifestNodeOptions(s);
        return f ? [[s, f]] : [];
      }),
    ),
  );
  const kills = pods.oomKills();
  for (const s of SERVICES) {
    const report = inLimits.services[s];
    if (report) report.oom_kills = (kills[s] ?? 0) - (killsBefore[s] ?? 0);
  }
  const report = {
    load: `block-number with an API key, ${connections} connections, ${seconds} s per run`,
    node_options_in_limits: flags ?? "each manifest's",
    limits_mb: pods.limitsMb,
    unconstrained,
    in_limits: inLimits,
    throughput_in_limits: +(inLimits["req/s"] / Math.max(unconstrained["req/s"], 1)).toFixed(2),
  };
  console.log(JSON.stringify(report, null, 2));
  if (values.out) writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
} finally {
  pods.remove();
}
