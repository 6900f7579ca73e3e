// The production side of the manifests: the production overlay's network policies, ServiceMonitor,
// mesh token and fixed replicas, every component on top of base, the secret examples, the one
// Dockerfile every service image is built from. Fixture in
// manifests.support.ts (kustomize, the real kubectl).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { describe, expect, it } from "vitest";
import { clusterNodesOf } from "../../libs/platform/src/redis.ts";
import { ruleGroups } from "../support/observability.ts";
import {
  CUSTOM_KINDS,
  containerOf,
  deployments,
  envValue,
  K8S,
  key,
  kustomize,
  MODELS,
  NAMESPACE,
  named,
  type Obj,
  ofKind,
  production,
  ROOT,
  redisCluster,
  SERVICE_NAMES,
  SERVICES,
  secretExamples,
  UID,
  useRenders,
} from "./manifests.support.ts";

useRenders();

describe("production overlay", () => {
  it("applies default-deny network policies and lets only the gateway call the gRPC services it calls", () => {
    const policies = ofKind(production, "NetworkPolicy").map((o) => new NetworkPolicy(o as never));
    const deny = named(policies, "default-deny-all");
    expect(deny.spec?.podSelector).toEqual({});
    expect(deny.spec?.policyTypes?.sort()).toEqual(["Egress", "Ingress"]);
    expect(deny.spec?.ingress ?? []).toEqual([]);
    expect(deny.spec?.egress ?? []).toEqual([]);
    for (const [name, spec] of Object.entries(SERVICES)) {
      if (spec.protocol !== "grpc") continue;
      const policy = named(policies, name);
      expect(policy.spec?.podSelector?.matchLabels).toEqual({ "app.kubernetes.io/name": name });
      const gatewayEgress = named(policies, "gateway").spec?.egress ?? [];
      if (!spec.calledByGateway) {
        // Nothing in the cluster may call it but, for settlement-worker, the dashboard (a wallet's own
        // payments, SettlementAccountService, which its mesh check keeps to that caller); the gateway
        // may not even try.
        const dashboard = name === "settlement-worker" ? ["dashboard"] : [];
        expect(policy.spec?.ingress ?? []).toEqual(
          dashboard.map((caller) => ({
            from: [{ podSelector: { matchLabels: { "app.kubernetes.io/name": caller } } }],
            ports: [{ protocol: "TCP", port: "grpc" }],
          })),
        );
        expect(JSON.stringify(gatewayEgress)).not.toContain(name);
        continue;
      }
      // quota-meter also serves the dashboard (AccountService, which its mesh check keeps to that caller).
      const callers = name === "quota-meter" ? ["gateway", "dashboard"] : ["gateway"];
      expect(policy.spec?.ingress).toEqual(
        callers.map((caller) => ({
          from: [{ podSelector: { matchLabels: { "app.kubernetes.io/name": caller } } }],
          ports: [{ protocol: "TCP", port: "grpc" }],
        })),
      );
      expect(gatewayEgress).toContainEqual({
        to: [{ podSelector: { matchLabels: { "app.kubernetes.io/name": name } } }],
        ports: [{ protocol: "TCP", port: spec.port }],
      });
    }
    // The system of record: only its owners reach PostgreSQL.
    const toPostgres = (name: string) =>
      (named(policies, name).spec?.egress ?? []).some((r) => r.ports?.some((p) => p.port === 5432));
    expect(SERVICE_NAMES.filter(toPostgres).sort()).toEqual(["quota-meter", "settlement-worker"]);
    const scrape = named(policies, "allow-prometheus-scrape");
    expect(scrape.spec?.ingress?.[0]?.ports).toEqual([{ protocol: "TCP", port: "metrics" }]);
  });

  it("has a ServiceMonitor scraping the metrics port of every Tollgate Service", () => {
    const monitors = ofKind(production, "ServiceMonitor") as Array<
      Obj & {
        spec: {
          selector: { matchLabels: Record<string, string> };
          endpoints: Array<{ port: string; path: string }>;
        };
      }
    >;
    expect(monitors).toHaveLength(1);
    const monitor = monitors[0]!;
    expect(monitor.apiVersion).toBe("monitoring.coreos.com/v1");
    expect(monitor.spec.endpoints).toEqual([expect.objectContaining({ port: "metrics", path: "/metrics" })]);
    const selected = ofKind(production, "Service")
      .map((o) => new Service(o as never))
      .filter((s) =>
        Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => s.metadata?.labels?.[k] === v),
      );
    expect(selected.map((s) => s.metadata?.name).sort()).toEqual([...SERVICE_NAMES].sort());
  });

  it("mounts the gateway's mesh token from a Secret and gives the gRPC services only its digest", () => {
    const gateway = named(deployments(production), "gateway");
    expect(envValue(containerOf(gateway), "MESH_TOKEN_FILE")).toBe("/var/run/secrets/tollgate/MESH_TOKEN");
    expect(gateway.spec!.template.spec!.volumes?.map((v) => v.secret?.secretName)).toContain(
      "gateway-mesh-token",
    );
    const config = new ConfigMap(ofKind(production, "ConfigMap")[0] as never);
    // Left invalid on purpose: the services refuse to start until the operator sets the digest.
    expect(config.data?.MESH_CALLER_GATEWAY_SHA256).toBe("SET-ME");
    for (const [name, spec] of Object.entries(SERVICES)) {
      if (!spec.calledByGateway) continue;
      const c = containerOf(named(deployments(production), name));
      expect(
        c.env?.find((e) => e.name === "MESH_CALLER_GATEWAY_SHA256")?.valueFrom?.configMapKeyRef,
        name,
      ).toMatchObject({
        key: "MESH_CALLER_GATEWAY_SHA256",
      });
      expect(
        c.env?.some((e) => e.name.startsWith("MESH_TOKEN")),
        `${name} holds no mesh token`,
      ).toBe(false);
    }
  });

  it("fixes replicas for the services without an autoscaler", () => {
    for (const name of ["quota-meter", "rpc-proxy", "settlement-worker", "dashboard"]) {
      expect(named(deployments(production), name).spec?.replicas).toBeGreaterThanOrEqual(2);
    }
  });
});

describe("components", () => {
  // Every component on top of base, rendered on its own (production combines several).
  const components = readdirSync(join(K8S, "components")).sort();

  it.each(components)("%s renders on top of base and every object validates", (component) => {
    const dir = mkdtempSync(join(tmpdir(), "tollgate-k8s-component-"));
    try {
      writeFileSync(
        join(dir, "kustomization.yaml"),
        [
          "apiVersion: kustomize.config.k8s.io/v1beta1",
          "kind: Kustomization",
          "resources:",
          `  - ${relative(dir, join(K8S, "base"))}`,
          "components:",
          `  - ${relative(dir, join(K8S, "components", component))}`,
          "",
        ].join("\n"),
      );
      const objects = kustomize(dir);
      expect(objects.filter((o) => !MODELS[key(o)] && !CUSTOM_KINDS.has(key(o))).map(key)).toEqual([]);
      for (const obj of objects.filter((o) => MODELS[key(o)])) {
        const Model = MODELS[key(obj)]!;
        expect(() => new Model(obj as never).validate(), `${key(obj)} ${obj.metadata.name}`).not.toThrow();
      }
      expect(
        deployments(objects)
          .map((d) => d.metadata?.name)
          .sort(),
      ).toEqual([...SERVICE_NAMES].sort());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("redis-cluster: every service on Redis reads REDIS_CLUSTER_NODES from the config, host:port nodes it accepts", () => {
    const config = ofKind(redisCluster, "ConfigMap").find((c) =>
      c.metadata.name.startsWith("tollgate-config"),
    ) as unknown as { metadata: { name: string }; data: Record<string, string> };
    const nodes = clusterNodesOf(config.data.REDIS_CLUSTER_NODES ?? "");
    expect(nodes.length).toBeGreaterThanOrEqual(3);
    const onRedis = deployments(redisCluster)
      .filter((d) => containerOf(d).env?.some((e) => e.name === "REDIS_URL"))
      .map((d) => d.metadata?.name);
    expect(onRedis.sort()).toEqual(["dashboard", "payment-verifier", "quota-meter", "settlement-worker"]);
    // Per service, the ConfigMap and key its REDIS_CLUSTER_NODES comes from (none for the rest).
    const refs = Object.fromEntries(
      deployments(redisCluster).map((d) => {
        const ref = containerOf(d).env?.find((e) => e.name === "REDIS_CLUSTER_NODES")?.valueFrom
          ?.configMapKeyRef;
        return [d.metadata?.name, ref ? `${ref.name}/${ref.key}` : "none"];
      }),
    );
    const fromConfig = `${config.metadata.name}/REDIS_CLUSTER_NODES`;
    expect(refs).toEqual(
      Object.fromEntries(SERVICE_NAMES.map((n) => [n, onRedis.includes(n) ? fromConfig : "none"])),
    );
    // The streams are made with 3 replicas by every service that may make one (NATS cluster of 3).
    expect(config.data.NATS_STREAM_REPLICAS).toBe("3");
    for (const name of ["quota-meter", "payment-verifier", "settlement-worker"]) {
      const ref = containerOf(named(deployments(production), name)).env?.find(
        (e) => e.name === "NATS_STREAM_REPLICAS",
      )?.valueFrom?.configMapKeyRef;
      expect(ref?.key, name).toBe("NATS_STREAM_REPLICAS");
    }
  });

  it("observability: one ConfigMap per dashboard for the Grafana sidecar, holding the dashboard file itself", () => {
    const dashboardsDir = join(ROOT, "deploy", "observability", "dashboards");
    const files = readdirSync(dashboardsDir).filter((f) => f.endsWith(".json"));
    const sidecar = ofKind(production, "ConfigMap")
      .map((o) => new ConfigMap(o as never))
      .filter((cm) => cm.metadata?.labels?.grafana_dashboard === "1");
    expect(sidecar).toHaveLength(files.length);
    for (const file of files) {
      const cm = sidecar.find((c) => Object.keys(c.data ?? {}).includes(file));
      expect(cm, file).toBeDefined();
      expect(cm!.metadata?.name, "a fixed name: a hashed one would leave the old dashboard behind").toBe(
        `tollgate-dashboard-${file.replace(/\.json$/, "")}`,
      );
      expect(cm!.metadata?.namespace).toBe(NAMESPACE);
      expect(cm!.data![file]).toBe(readFileSync(join(dashboardsDir, file), "utf8"));
    }
  });

  it("observability: a PrometheusRule with exactly the groups of the rules file compose loads", () => {
    const rules = ofKind(production, "PrometheusRule") as Array<Obj & { spec: { groups: unknown } }>;
    expect(rules).toHaveLength(1);
    expect(rules[0]!.metadata.namespace).toBe(NAMESPACE);
    expect(rules[0]!.spec.groups).toEqual(ruleGroups());
  });
});

describe("secrets.example.yaml", () => {
  it("is not part of any kustomization", () => {
    for (const dir of ["base", "overlays/production"]) {
      expect(readFileSync(join(K8S, dir, "kustomization.yaml"), "utf8")).not.toMatch(
        /^\s*-\s*\S*secrets\.example/m,
      );
    }
  });

  it("holds only placeholders", () => {
    expect(secretExamples.length).toBeGreaterThan(0);
    for (const secret of secretExamples) {
      expect(() => new Secret(secret as never).validate()).not.toThrow();
      expect(secret.data, "plain stringData placeholders only").toBeUndefined();
      for (const [k, value] of Object.entries(secret.stringData as Record<string, string>)) {
        expect(value, `${secret.metadata.name}.${k}`).toContain("REPLACE_ME");
      }
    }
  });
});

// biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's build argument, literally.
const SERVICE_ARG = "${SERVICE}";

describe("deploy/docker/Dockerfile", () => {
  const dockerfile = readFileSync(join(ROOT, "deploy", "docker", "Dockerfile"), "utf8");
  const stages = dockerfile.split(/^FROM /m).slice(1);
  const runtime = stages.at(-1) ?? "";
  const stage = (name: string) => stages.find((s) => new RegExp(`^\\S+ AS ${name}$`, "m").test(s)) ?? "";

  it("builds on Node 24 with the repo's pnpm and a frozen, production-only, filtered install", () => {
    // The base deploy/docker/machine.sh makes from Debian's packages and the pinned node package.
    const node = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).devDependencies.node as string;
    expect(dockerfile).toMatch(
      new RegExp(`^ARG NODE_IMAGE=tollgate/node-base:${node.replaceAll(".", "\\.")}-bookworm$`, "m"),
    );
    const packageManager = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
      .packageManager as string;
    expect(stage("pnpm")).toContain(`ARG PNPM_VERSION=${packageManager.replace("pnpm@", "")}`);
    expect(dockerfile).not.toMatch(/^RUN .*corepack/im);
    // No frontend image to fetch: the daemon's built-in BuildKit.
    expect(dockerfile).not.toMatch(/^# *syntax=/m);
    expect(stage("files")).toMatch(
      /pnpm install --frozen-lockfile --prod .*\n.*--filter "@tollgate\/\$\{SERVICE\}\.\.\."/,
    );
  });

  it("gives the proxy's CA to the downloading steps as a secret only, never as a layer", () => {
    const instructions = dockerfile.replace(/^#.*\n/gm, "");
    const runs = instructions.split(/^(?=RUN |COPY |ADD |ENV |ARG |FROM )/m);
    for (const step of runs.filter((r) => /NODE_EXTRA_CA_CERTS/.test(r))) {
      expect(step).toMatch(/^RUN --mount=type=secret,id=ca /);
    }
    expect(runs.filter((r) => /NODE_EXTRA_CA_CERTS/.test(r)).length).toBeGreaterThan(0);
    expect(instructions).not.toMatch(/^(ENV|ARG|COPY|ADD) .*(NODE_EXTRA_CA_CERTS|\.crt|\.pem)/m);
  });

  it("copies only the workspace manifests, proto/, libs/, services/ and the bundler", () => {
    const sources = [...dockerfile.matchAll(/^COPY (?!--)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(" "));
    expect(sources.length).toBeGreaterThan(0);
    for (const src of sources) {
      expect(src).toMatch(
        /^(package\.json|pnpm-lock\.yaml|pnpm-workspace\.yaml|proto\/|libs\/|tools\/build\/|services\/(\$\{SERVICE\}\/)?$)/,
      );
    }
    // Every workspace lib a service may depend on is in the image's install.
    expect(stage("files")).toMatch(/^COPY libs\/ libs\/$/m);
  });

  it("runs as the manifests' uid with node and the service's bundle, built once for all six", () => {
    expect(runtime).toMatch(new RegExp(`^USER ${UID}:${UID}$`, "m"));
    const cmd = /^CMD (\[.*\])$/m.exec(runtime);
    expect(JSON.parse(cmd![1]!)).toEqual(["node", "dist/main.mjs"]);
    // The build stage knows no SERVICE: BuildKit builds it once and every image reuses it.
    expect(stage("build")).not.toMatch(/ARG SERVICE|\$\{SERVICE\}/);
    expect(stage("build")).toMatch(/node tools\/build\/bundle\.ts$/m);
    expect(stage("files")).toContain(
      `COPY --from=build /app/services/${SERVICE_ARG}/dist/ services/${SERVICE_ARG}/dist/`,
    );
    // The runtime stage is the base and one layer of files: no package manager, no store.
    expect(runtime).toMatch(/^COPY --from=files \/out\/ \/$/m);
    expect(runtime).not.toMatch(/^(RUN|ADD) /m);
  });

  it.each(SERVICE_NAMES)(
    "%s: the CMD runs services/<name>/dist/main.mjs, bundled from src/main.ts",
    (name) => {
      const workdir = [...runtime.matchAll(/^WORKDIR (\S+)$/gm)].at(-1)?.[1];
      expect(workdir).toBe(`/app/services/${SERVICE_ARG}`);
      const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(runtime)![1]!) as string[];
      const entry = join(ROOT, workdir!.replace("/app/", "").replace(SERVICE_ARG, name), cmd[1]!);
      expect(relative(ROOT, entry)).toBe(`services/${name}/dist/main.mjs`);
      // What tools/build/bundle.ts bundles (test/deploy/bundles.test.ts runs two of the bundles).
      expect(existsSync(join(ROOT, "services", name, "src", "main.ts"))).toBe(true);
    },
  );
});
