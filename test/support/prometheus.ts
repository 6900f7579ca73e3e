// A real Prometheus server (Debian's `prometheus` package, 2.42) for a test: loopback, a free port,
// a temporary data directory, one-second scrapes and rule evaluations. Never :9090, so a system
// Prometheus on this machine is no concern.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@tollgate/local";
import { eventually } from "./eventually.ts";

interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}
interface PromAlert {
  labels: Record<string, string>;
  state: "pending" | "firing";
}

export interface Prometheus {
  url: string;
  /** An instant query at the current time; throws on a PromQL error. */
  query(expr: string): Promise<PromSample[]>;
  alerts(): Promise<PromAlert[]>;
  /** Every metric name in the TSDB (scraped and recorded). */
  metricNames(): Promise<string[]>;
  /** Metric families the targets describe (HELP/TYPE), with or without samples yet. */
  metadata(): Promise<Record<string, unknown>>;
  /** Series matching a selector, with their labels. */
  series(match: string): Promise<Record<string, string>[]>;
  stop(): Promise<void>;
}

async function api<T>(url: string): Promise<T> {
  const res = await fetch(url);
  const body = (await res.json()) as { status: string; data: T; error?: string };
  if (body.status !== "success") throw new Error(`${url}: ${body.error ?? res.status}`);
  return body.data;
}

/** Starts Prometheus scraping `targets` (job name → host:port of a /metrics endpoint). */
export async function startPrometheus(opts: {
  targets: Record<string, string>;
  ruleFiles: string[];
}): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-prometheus-"));
  const port = await freePort();
  const config = {
    global: { scrape_interval: "1s", scrape_timeout: "1s", evaluation_interval: "1s" },
    rule_files: opts.ruleFiles,
    scrape_configs: Object.entries(opts.targets).map(([job, target]) => ({
      job_name: job,
      static_configs: [{ targets: [target] }],
    })),
  };
  // JSON is YAML: Prometheus reads it as it is.
  writeFileSync(join(dir, "prometheus.yml"), JSON.stringify(config, null, 2));
  const url = `http://127.0.0.1:${port}`;
  const output: string[] = [];
  const child: ChildProcess = spawn(
    "prometheus",
    [
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--storage.tsdb.retention.time=1h",
      "--log.level=warn",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stdout?.on("data", (b: Buffer) => output.push(b.toString()));
  child.stderr?.on("data", (b: Buffer) => output.push(b.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));

  const stop = async () => {
    if (child.exitCode === null) child.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const state = await eventually(
    async () => {
      if (child.exitCode !== null) return "exited";
      const ready = await fetch(`${url}/-/ready`).then(
        (r) => r.ok,
        () => false,
      );
      return ready ? "ready" : "starting";
    },
    (s) => s !== "starting",
    15_000,
    100,
  );
  if (state !== "ready") {
    await stop();
    throw new Error(
      `prometheus ${state === "exited" ? "exited" : "did not become ready"}: ${output.join("")}`,
    );
  }

  return {
    url,
    query: async (expr) =>
      (await api<{ result: PromSample[] }>(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`)).result,
    alerts: async () => (await api<{ alerts: PromAlert[] }>(`${url}/api/v1/alerts`)).alerts,
    metricNames: () => api<string[]>(`${url}/api/v1/label/__name__/values`),
    metadata: () => api<Record<string, unknown>>(`${url}/api/v1/metadata`),
    series: (match) =>
      api<Record<string, string>[]>(`${url}/api/v1/series?match[]=${encodeURIComponent(match)}`),
    stop,
  };
}
