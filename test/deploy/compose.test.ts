// deploy/compose, checked without Docker (no Docker engine can run here, so no `docker compose
// config`): the compose file is parsed and every reference in it resolved by hand: images, bind
// mounts, named volumes, dependencies, required variables, what Prometheus scrapes and loads, and
// what Grafana is provisioned with.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { OBSERVABILITY, RULES_FILE } from "../support/observability.ts";

const COMPOSE_DIR = resolve(import.meta.dirname, "../../deploy/compose");
const TOLLGATE = [
  "gateway",
  "quota-meter",
  "payment-verifier",
  "rpc-proxy",
  "settlement-worker",
  "dashboard",
];

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; args?: Record<string, string> };
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: string[] | Record<string, unknown>;
  ports?: string[];
}
const text = readFileSync(join(COMPOSE_DIR, "compose.yaml"), "utf8");
// `merge: true`: the services share the x-tollgate-service block through `<<:`.
const compose = parse(text, { merge: true }) as {
  services: Record<string, ComposeService>;
  volumes: Record<string, unknown>;
};
const services = compose.services;

/** The bind mounts of a service: host path (resolved from deploy/compose) → container path. */
function binds(name: string): Array<{ host: string; container: string }> {
  return (services[name]?.volumes ?? [])
    .map((v) => v.split(":"))
    .filter(([src]) => src!.startsWith(".") || src!.startsWith("/"))
    .map(([src, target]) => ({ host: resolve(COMPOSE_DIR, src!), container: target! }));
}

/** The host file or folder mounted at `container` in a service, or under a mounted folder. */
function hostPathOf(name: string, container: string): string {
  const mount = binds(name).find((b) => container === b.container || container.startsWith(`${b.container}/`));
  if (!mount) throw new Error(`${name}: nothing is mounted at ${container}`);
  return join(mount.host, container.slice(mount.container.length));
}

describe("compose stack (no Docker engine here: parsed and resolved structurally, not `docker compose config`)", () => {
  it("runs the six services, PostgreSQL, Redis, NATS, Prometheus and Grafana, every image pinned", () => {
    expect(Object.keys(services).sort()).toEqual(
      [...TOLLGATE, "postgres", "redis", "nats", "prometheus", "grafana"].sort(),
    );
    for (const [name, s] of Object.entries(services)) {
      expect(s.image, name).toMatch(/^[\w./-]+:[\w.-]+$/);
      expect(s.image, name).not.toMatch(/:latest$/);
    }
    for (const name of TOLLGATE) {
      const build = services[name]!.build!;
      expect(existsSync(join(resolve(COMPOSE_DIR, build.context), build.dockerfile)), name).toBe(true);
      expect(build.args?.SERVICE).toBe(name);
    }
    expect(services.grafana!.image).toMatch(/^grafana\/grafana:\d+\.\d+\.\d+$/);
  });

  it("mounts only files that exist and volumes that are declared; depends only on services it has", () => {
    const isBind = (v: string) => v.startsWith(".") || v.startsWith("/");
    const mounts = Object.entries(services).flatMap(([name, s]) =>
      (s.volumes ?? []).map((v) => ({ name, v })),
    );
    const hostPaths = mounts.filter((m) => isBind(m.v));
    const named = mounts.filter((m) => !isBind(m.v));
    expect(hostPaths.length).toBeGreaterThan(0);
    expect(named.length).toBeGreaterThan(0);
    for (const { name, v } of hostPaths)
      expect(existsSync(resolve(COMPOSE_DIR, v.split(":")[0]!)), `${name}: ${v}`).toBe(true);
    for (const { name, v } of named)
      expect(Object.keys(compose.volumes), `${name}: ${v}`).toContain(v.split(":")[0]);
    for (const [name, s] of Object.entries(services)) {
      const deps = Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
      for (const dep of deps) expect(Object.keys(services), `${name} depends on ${dep}`).toContain(dep);
    }
  });

  it("names every required variable in .env.example", () => {
    const example = readFileSync(join(COMPOSE_DIR, ".env.example"), "utf8");
    const required = [...text.matchAll(/\$\{(\w+):\?/g)].map((m) => m[1]!);
    expect(required).toContain("GRAFANA_ADMIN_PASSWORD");
    for (const name of required) expect(example, name).toMatch(new RegExp(`^${name}=`, "m"));
  });

  it("Prometheus scrapes every service's metrics port and loads the one rules file", () => {
    const config = parse(
      readFileSync(hostPathOf("prometheus", "/etc/prometheus/prometheus.yml"), "utf8"),
    ) as {
      rule_files: string[];
      scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }>;
    };
    const targets = config.scrape_configs.flatMap((c) => c.static_configs.flatMap((s) => s.targets));
    for (const name of TOLLGATE) {
      expect(targets).toContain(`${name}:${services[name]!.environment!.METRICS_PORT}`);
    }
    // The rules glob, resolved inside the container, reaches the repository's rules file.
    const [glob] = config.rule_files;
    const mounted = binds("prometheus").filter(
      (b) =>
        b.container.startsWith(glob!.slice(0, glob!.lastIndexOf("/") + 1)) && b.container.endsWith(".yml"),
    );
    expect(mounted.map((b) => b.host)).toEqual([RULES_FILE]);
  });

  it("Grafana is provisioned with this Prometheus and the dashboards Kubernetes ships", () => {
    const datasources = parse(
      readFileSync(hostPathOf("grafana", "/etc/grafana/provisioning/datasources/prometheus.yml"), "utf8"),
    ) as { datasources: Array<{ type: string; url: string; isDefault: boolean }> };
    expect(datasources.datasources).toEqual([
      expect.objectContaining({ type: "prometheus", url: "http://prometheus:9090", isDefault: true }),
    ]);
    expect(services.prometheus!.ports).toContain("127.0.0.1:9090:9090");

    const providers = parse(
      readFileSync(hostPathOf("grafana", "/etc/grafana/provisioning/dashboards/tollgate.yml"), "utf8"),
    ) as { providers: Array<{ type: string; options: { path: string } }> };
    expect(providers.providers).toHaveLength(1);
    const folder = hostPathOf("grafana", providers.providers[0]!.options.path);
    expect(folder).toBe(join(OBSERVABILITY, "dashboards"));
    expect(statSync(folder).isDirectory()).toBe(true);
  });
});
