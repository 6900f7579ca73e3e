// Renders the kustomize trees with the real kubectl (offline): base, production and every component on
// top of base. Validates every object against the Kubernetes OpenAPI schemas (kubernetes-models), and
// checks the deployment non-negotiables:
// locked-down containers, probes on the right ports, Prometheus annotations, env names from each
// service's environment table (services/<name>/src/env.ts; the required ones all set), no secrets in
// the manifests, event outboxes on volumes that outlive the pod, and a Dockerfile whose entry point
// exists for each service.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { Deployment, type IDeployment } from "kubernetes-models/apps/v1/Deployment";
import { type IStatefulSet, StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import type { IContainer } from "kubernetes-models/v1/Container";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENV_TABLES } from "../../deploy/env/tables.ts";
import { ruleGroups } from "../support/observability.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const K8S = join(ROOT, "k8s");
const NAMESPACE = "tollgate";
const UID = 65532;

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } } & Record<
  string,
  unknown
>;

interface ServiceSpec {
  /** The port probes use: gRPC for the internal services, HTTP for the gateway and the dashboard. */
  protocol: "grpc" | "http";
  /** Whether the gateway calls it (the settlement worker's one API is the operator's). */
  calledByGateway?: boolean;
  port: number;
  metricsPort: number;
}

const SERVICES: Record<string, ServiceSpec> = {
  gateway: {
    protocol: "http",
    port: 8080,
    metricsPort: 9460,
  },
  "quota-meter": {
    protocol: "grpc",
    calledByGateway: true,
    port: 50051,
    metricsPort: 9461,
  },
  "payment-verifier": {
    protocol: "grpc",
    calledByGateway: true,
    port: 50052,
    metricsPort: 9462,
  },
  "rpc-proxy": {
    protocol: "grpc",
    calledByGateway: true,
    port: 50053,
    metricsPort: 9463,
  },
  "settlement-worker": {
    protocol: "grpc",
    port: 50054,
    metricsPort: 9464,
  },
  dashboard: {
    protocol: "http",
    port: 8090,
    metricsPort: 9465,
  },
};
const SERVICE_NAMES = Object.keys(SERVICES);

/** Schema-backed models for every built-in kind the manifests may contain. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  "v1/Namespace": Namespace,
  "v1/ServiceAccount": ServiceAccount,
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "apps/v1/Deployment": Deployment,
  "apps/v1/StatefulSet": StatefulSet,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
};
/** Custom resources without a model here; checked field by field below. */
const CUSTOM_KINDS = new Set([
  "monitoring.coreos.com/v1/ServiceMonitor",
  "monitoring.coreos.com/v1/PrometheusRule",
]);

/** YAML → objects, parsed by kubectl itself: an empty merge patch applied locally prints each unchanged. */
function parseYaml(yaml: string): Obj[] {
  const json = execFileSync(
    "kubectl",
    ["patch", "--local", "--filename=-", "--type=merge", "--patch={}", "--output=json"],
    { input: yaml, encoding: "utf8" },
  ).trim();
  // kubectl prints one pretty-printed object after another; only a top-level object closes at column 0.
  return JSON.parse(`[${json.replace(/^}\n{/gm, "},{")}]`) as Obj[];
}

function kustomize(dir: string): Obj[] {
  return parseYaml(execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8" }));
}

const key = (o: Obj) => `${o.apiVersion}/${o.kind}`;
const ofKind = (objs: Obj[], kind: string) => objs.filter((o) => o.kind === kind);
/** Every service's workload: a Deployment, or a StatefulSet for a service with an event outbox. */
type Workload = Deployment | StatefulSet;
const deployments = (objs: Obj[]): Workload[] => [
  ...ofKind(objs, "Deployment").map((o) => new Deployment(o as IDeployment)),
  ...ofKind(objs, "StatefulSet").map((o) => new StatefulSet(o as IStatefulSet)),
];
/** The services that publish events through an outbox (OUTBOX_DIR): their pods keep it on a volume of their own. */
const PUBLISHERS = () =>
  Object.keys(SERVICES).filter((name) => ENV_TABLES[name]!.some((v) => v.name === "OUTBOX_DIR"));

function named<T extends { metadata?: { name?: string } }>(list: T[], name: string): T {
  const found = list.find((o) => o.metadata?.name === name);
  if (!found) throw new Error(`no ${name} in ${list.map((o) => o.metadata?.name).join(", ")}`);
  return found;
}

function containerOf(d: Workload): IContainer {
  const containers = d.spec?.template.spec?.containers ?? [];
  expect(containers, `${d.metadata?.name} runs one container`).toHaveLength(1);
  return containers[0]!;
}

function envValue(c: IContainer, name: string): string | undefined {
  return c.env?.find((e) => e.name === name)?.value;
}

function containerPort(c: IContainer, name: string): number | undefined {
  return c.ports?.find((p) => p.name === name)?.containerPort;
}

/** Every string anywhere in a value, for the secret scan. */
function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === "object") return Object.values(value).flatMap(strings);
  return [];
}

let base: Obj[];
let production: Obj[];
let selfHosted: Obj[];
let secretExamples: Obj[];
let scratch: string;

beforeAll(() => {
  base = kustomize(join(K8S, "base"));
  production = kustomize(join(K8S, "overlays", "production"));
  // A throwaway overlay: production plus the self-hosted facilitator component. kustomize only
  // accepts relative paths to other kustomization roots.
  scratch = mkdtempSync(join(tmpdir(), "tollgate-k8s-"));
  const rel = (p: string) => relative(scratch, join(K8S, p));
  writeFileSync(
    join(scratch, "kustomization.yaml"),
    [
      "apiVersion: kustomize.config.k8s.io/v1beta1",
      "kind: Kustomization",
      "resources:",
      `  - ${rel("overlays/production")}`,
      "components:",
      `  - ${rel("components/self-hosted-facilitator")}`,
      "",
    ].join("\n"),
  );
  selfHosted = kustomize(scratch);
  secretExamples = parseYaml(readFileSync(join(K8S, "base", "secrets.example.yaml"), "utf8"));
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const renders = () => ({ base, production, "production + self-hosted-facilitator": selfHosted });

describe.each(["base", "production", "production + self-hosted-facilitator"] as const)(
  "render: %s",
  (which) => {
    const objects = () => renders()[which];

    it("validates every object against the Kubernetes schemas", () => {
      expect(objects().length).toBeGreaterThan(0);
      for (const obj of objects()) {
        const Model = MODELS[key(obj)];
        if (!Model) {
          expect(CUSTOM_KINDS.has(key(obj)), `unexpected kind ${key(obj)} (${obj.metadata.name})`).toBe(true);
          continue;
        }
        expect(() => new Model(obj as never).validate(), `${key(obj)} ${obj.metadata.name}`).not.toThrow();
      }
    });

    it("puts everything in the tollgate namespace", () => {
      for (const obj of objects()) {
        if (obj.kind === "Namespace") expect(obj.metadata.name).toBe(NAMESPACE);
        else expect(obj.metadata.namespace, `${obj.kind} ${obj.metadata.name}`).toBe(NAMESPACE);
      }
    });

    it("has one workload, Service, ServiceAccount and PodDisruptionBudget per service; a StatefulSet for each event publisher", () => {
      expect(
        ofKind(objects(), "StatefulSet")
          .map((o) => o.metadata.name)
          .sort(),
      ).toEqual(PUBLISHERS().sort());
      expect(
        ofKind(objects(), "Deployment")
          .map((o) => o.metadata.name)
          .sort(),
      ).toEqual(SERVICE_NAMES.filter((n) => !PUBLISHERS().includes(n)).sort());
      for (const kind of ["Service", "ServiceAccount", "PodDisruptionBudget"]) {
        expect(
          ofKind(objects(), kind)
            .map((o) => o.metadata.name)
            .sort(),
          kind,
        ).toEqual([...SERVICE_NAMES].sort());
      }
      const hpas = ofKind(objects(), "HorizontalPodAutoscaler").map(
        (o) => new HorizontalPodAutoscaler(o as never),
      );
      expect(hpas.map((h) => h.metadata?.name).sort()).toEqual(["gateway", "payment-verifier"]);
      for (const hpa of hpas) {
        const target = named(deployments(objects()), hpa.metadata!.name!);
        expect(hpa.spec?.scaleTargetRef).toMatchObject({ apiVersion: "apps/v1", kind: target.kind });
        expect(hpa.spec?.scaleTargetRef.name).toBe(hpa.metadata?.name);
        // The autoscaler owns the count: a fixed replicas field would fight it on every apply.
        expect(named(deployments(objects()), hpa.metadata!.name!).spec?.replicas).toBeUndefined();
      }
    });

    it("runs every pod and container locked down", () => {
      for (const d of deployments(objects())) {
        const name = d.metadata?.name;
        const pod = d.spec!.template.spec!;
        expect(pod.automountServiceAccountToken, name).toBe(false);
        expect(pod.serviceAccountName, name).toBe(name);
        expect(named(ofKind(objects(), "ServiceAccount"), name!).automountServiceAccountToken, name).toBe(
          false,
        );
        expect(pod.securityContext, name).toMatchObject({
          runAsNonRoot: true,
          runAsUser: UID,
          runAsGroup: UID,
          seccompProfile: { type: "RuntimeDefault" },
        });
        expect(pod.hostNetwork ?? false, name).toBe(false);
        expect(pod.terminationGracePeriodSeconds, name).toBeGreaterThanOrEqual(30);
        for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
          expect(c.securityContext, `${name}/${c.name}`).toMatchObject({
            runAsNonRoot: true,
            runAsUser: UID,
            readOnlyRootFilesystem: true,
            allowPrivilegeEscalation: false,
            capabilities: { drop: ["ALL"] },
            seccompProfile: { type: "RuntimeDefault" },
          });
          expect(c.securityContext?.privileged ?? false).toBe(false);
          expect(c.securityContext?.capabilities?.add ?? []).toEqual([]);
          // Node writes temp files to an emptyDir; the outbox journal outlives the pod (a claim of its own).
          const tmp = c.volumeMounts?.find((m) => m.mountPath === "/tmp");
          expect(tmp, `${name} mounts /tmp`).toBeDefined();
          expect(
            pod.volumes?.find((v) => v.name === tmp?.name)?.emptyDir,
            `${name} /tmp is an emptyDir`,
          ).toBeDefined();
          const outbox = envValue(c, "OUTBOX_DIR");
          if (c.name !== name) continue;
          expect(outbox !== undefined, `${name} has an outbox`).toBe(PUBLISHERS().includes(name!));
          if (outbox) {
            const mount = c.volumeMounts?.find((m) => m.mountPath === outbox);
            expect(mount, `${name} mounts OUTBOX_DIR`).toBeDefined();
            expect(
              pod.volumes?.find((v) => v.name === mount?.name),
              `${name}: not a pod volume`,
            ).toBeUndefined();
            expect(d).toBeInstanceOf(StatefulSet);
            const set = d as StatefulSet;
            const claim = set.spec?.volumeClaimTemplates?.find((t) => t.metadata?.name === mount?.name);
            expect(claim?.spec?.accessModes, `${name}: its outbox is a claim of its own`).toEqual([
              "ReadWriteOnce",
            ]);
            expect(claim?.spec?.resources?.requests?.storage).toBeDefined();
            // Kept when the pod goes, and when a scale-down removes its ordinal (its events wait there).
            expect(set.spec?.persistentVolumeClaimRetentionPolicy).toEqual({
              whenDeleted: "Retain",
              whenScaled: "Retain",
            });
            // The governing Service is the service's own headless one.
            expect(set.spec?.serviceName).toBe(name);
            const svc = new Service(named(ofKind(objects(), "Service"), name!) as never);
            expect(svc.spec?.clusterIP).toBe("None");
          }
        }
      }
    });

    it("sets requests and limits on every container", () => {
      for (const d of deployments(objects())) {
        const { resources } = containerOf(d);
        expect(resources?.requests, d.metadata?.name).toMatchObject({
          cpu: expect.anything(),
          memory: expect.anything(),
        });
        expect(resources?.limits, d.metadata?.name).toMatchObject({
          cpu: expect.anything(),
          memory: expect.anything(),
        });
      }
    });

    it("uses the service's image from ghcr.io/tollgate", () => {
      for (const d of deployments(objects())) {
        expect(containerOf(d).image).toMatch(
          new RegExp(`^ghcr\\.io/tollgate/${d.metadata?.name}(:[\\w.-]+|@sha256:[0-9a-f]{64})$`),
        );
      }
    });

    it("probes every gRPC service with grpc health on its gRPC port", () => {
      for (const [name, spec] of Object.entries(SERVICES)) {
        if (spec.protocol !== "grpc") continue;
        const c = containerOf(named(deployments(objects()), name));
        expect(containerPort(c, "grpc"), name).toBe(spec.port);
        expect(envValue(c, "GRPC_PORT"), name).toBe(String(spec.port));
        for (const probe of [c.startupProbe, c.readinessProbe, c.livenessProbe]) {
          expect(probe?.grpc?.port, name).toBe(spec.port);
        }
      }
    });

    it.each(["gateway", "dashboard"])(
      "probes the %s over HTTP on /health and drains before stopping",
      (name) => {
        const d = named(deployments(objects()), name);
        const c = containerOf(d);
        expect(containerPort(c, "http")).toBe(SERVICES[name]!.port);
        expect(envValue(c, "PORT")).toBe(String(SERVICES[name]!.port));
        for (const probe of [c.startupProbe, c.readinessProbe, c.livenessProbe]) {
          expect(probe?.httpGet?.path).toBe("/health");
          expect([SERVICES[name]!.port, "http"]).toContain(probe?.httpGet?.port);
        }
        const sleep = c.lifecycle?.preStop?.sleep?.seconds ?? 0;
        expect(sleep).toBeGreaterThan(0);
        expect(d.spec!.template.spec!.terminationGracePeriodSeconds).toBeGreaterThan(sleep);
      },
    );

    it("lets every drain finish within the grace period (preStop sleep, then SHUTDOWN_TIMEOUT_MS)", () => {
      const table = ENV_TABLES.gateway!;
      const defaultTimeout = Number(table.find((v) => v.name === "SHUTDOWN_TIMEOUT_MS")?.default);
      expect(defaultTimeout).toBeGreaterThan(0);
      for (const d of deployments(objects())) {
        const c = containerOf(d);
        const sleep = c.lifecycle?.preStop?.sleep?.seconds ?? 0;
        const timeoutMs = Number(envValue(c, "SHUTDOWN_TIMEOUT_MS") ?? defaultTimeout);
        const grace = d.spec!.template.spec!.terminationGracePeriodSeconds ?? 30;
        expect(sleep + timeoutMs / 1000, `${d.metadata?.name}: drain deadline`).toBeLessThan(grace);
      }
      // The gateway waits for the longest request it may have in flight: execute, then settle.
      const gateway = containerOf(named(deployments(objects()), "gateway"));
      expect(Number(envValue(gateway, "SHUTDOWN_TIMEOUT_MS"))).toBeGreaterThan(40_000);
    });

    it("annotates every pod for Prometheus, pointing at its metrics port", () => {
      for (const [name, spec] of Object.entries(SERVICES)) {
        const d = named(deployments(objects()), name);
        const c = containerOf(d);
        expect(d.spec!.template.metadata?.annotations, name).toMatchObject({
          "prometheus.io/scrape": "true",
          "prometheus.io/port": String(spec.metricsPort),
          "prometheus.io/path": "/metrics",
        });
        expect(containerPort(c, "metrics"), name).toBe(spec.metricsPort);
        expect(envValue(c, "METRICS_PORT"), name).toBe(String(spec.metricsPort));
      }
    });

    it("binds 0.0.0.0 and sets only what the service's environment table declares, every required variable included", () => {
      for (const name of Object.keys(SERVICES)) {
        const c = containerOf(named(deployments(objects()), name));
        expect(c.envFrom ?? [], `${name}: env names are explicit`).toEqual([]);
        expect(envValue(c, "BIND_HOST"), name).toBe("0.0.0.0");
        const table = ENV_TABLES[name]!;
        const declared = (envName: string) =>
          table.find((v) => v.name === envName || v.names?.includes(envName)) ??
          table.find((v) => v.secret && `${v.name}_FILE` === envName);
        for (const e of c.env ?? []) {
          const v = declared(e.name);
          expect(v, `${name} sets ${e.name}, which is not in services/${name}/src/env.ts`).toBeDefined();
          // A secret is never a literal in a manifest: a mounted file (NAME_FILE) or a reference.
          if (v?.secret && !e.name.endsWith("_FILE"))
            expect(e.value, `${name}: ${e.name} is a literal`).toBeUndefined();
        }
        const set = new Set((c.env ?? []).map((e) => e.name.replace(/_FILE$/, "")));
        const missing = table.filter((v) => v.required === true && !set.has(v.name)).map((v) => v.name);
        expect(missing, `${name}: required variables the manifests do not set`).toEqual([]);
      }
    });

    it("resolves every ConfigMap and Secret reference", () => {
      const configMaps = ofKind(objects(), "ConfigMap").map((o) => new ConfigMap(o as never));
      for (const d of deployments(objects())) {
        const pod = d.spec!.template.spec!;
        const c = containerOf(d);
        for (const e of c.env ?? []) {
          const cm = e.valueFrom?.configMapKeyRef;
          if (cm)
            expect(named(configMaps, cm.name!).data?.[cm.key], `${e.name} from ${cm.name}`).toBeDefined();
          const secret = e.valueFrom?.secretKeyRef;
          if (secret) {
            // Secrets are never rendered: the operator creates them as documented in the example.
            const example = secretExamples.find((s) => s.metadata.name === secret.name);
            expect(example, `secret ${secret.name} is documented in secrets.example.yaml`).toBeDefined();
            expect(
              (example?.stringData as Record<string, string> | undefined)?.[secret.key],
              `${secret.name}.${secret.key}`,
            ).toBeDefined();
          }
          // NAME_FILE points into a mounted Secret volume holding that key.
          if (e.name.endsWith("_FILE")) {
            const mount = c.volumeMounts?.find((m) => e.value?.startsWith(`${m.mountPath}/`));
            expect(mount?.readOnly, `${e.name} is on a read-only mount`).toBe(true);
            const volume = pod.volumes?.find((v) => v.name === mount?.name)?.secret;
            expect(volume?.secretName, `${e.name} comes from a Secret volume`).toBeDefined();
            const file = e.value!.slice(mount!.mountPath.length + 1);
            const example = secretExamples.find((s) => s.metadata.name === volume!.secretName);
            const keys = volume?.items
              ? volume.items.map((i) => i.path)
              : Object.keys(example?.stringData ?? {});
            expect(keys, `${e.name} names a file in ${volume?.secretName}`).toContain(file);
            expect(Object.keys(example?.stringData ?? {})).toContain(file);
          }
        }
      }
    });

    it("selects each Deployment's pods from its Service, PDB and network of named ports", () => {
      for (const d of deployments(objects())) {
        const name = d.metadata!.name!;
        const labels = d.spec!.template.metadata?.labels ?? {};
        expect(d.spec!.selector.matchLabels).toEqual({ "app.kubernetes.io/name": name });
        expect(labels).toMatchObject({
          "app.kubernetes.io/name": name,
          "app.kubernetes.io/part-of": "tollgate",
        });
        const svc = new Service(named(ofKind(objects(), "Service"), name) as never);
        expect(labels).toMatchObject(svc.spec?.selector ?? { missing: true });
        const c = containerOf(d);
        for (const port of svc.spec?.ports ?? []) {
          expect(
            c.ports?.map((p) => p.name),
            `${name} Service targets a named container port`,
          ).toContain(port.targetPort);
        }
        expect(svc.spec?.ports?.map((p) => p.name)).toContain("metrics");
        const pdb = new PodDisruptionBudget(named(ofKind(objects(), "PodDisruptionBudget"), name) as never);
        expect(labels).toMatchObject(pdb.spec?.selector?.matchLabels ?? { missing: true });
      }
    });

    it("renders no Secret and no credential-looking value", () => {
      expect(ofKind(objects(), "Secret")).toEqual([]);
      for (const value of strings(objects()).map((v) => v.replace(/sha256:[0-9a-f]{64}/g, "sha256:digest"))) {
        expect(value, "private key").not.toMatch(/(^|[^0-9a-fA-F])(0x)?[0-9a-fA-F]{64}([^0-9a-fA-F]|$)/);
        expect(value, "URL with credentials").not.toMatch(/:\/\/[^/\s:@]+:[^/\s@]+@/);
        expect(value, "node URL with an API key").not.toMatch(/https?:\/\/\S+\/(v\d\/)?[A-Za-z0-9_-]{24,}/);
      }
    });
  },
);

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
        // Nothing in the cluster may call it; the gateway may not even try.
        expect(policy.spec?.ingress ?? []).toEqual([]);
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

  it("builds on Node 24 with the repo's pnpm and a frozen, production-only, filtered install", () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=(node:24-slim|gcr\.io\/distroless\/nodejs24-debian\d+)$/m);
    const packageManager = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
      .packageManager as string;
    expect(dockerfile).toContain(`npm i -g ${packageManager}`);
    expect(dockerfile).not.toMatch(/^RUN .*corepack/im);
    expect(dockerfile).toMatch(
      /pnpm install --frozen-lockfile --prod .*--filter "@tollgate\/\$\{SERVICE\}\.\.\."/,
    );
  });

  it("copies only the workspace manifests, proto/, libs/ and the one service", () => {
    const sources = [...dockerfile.matchAll(/^COPY (?!--)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(" "));
    expect(sources.length).toBeGreaterThan(0);
    for (const src of sources) {
      expect(src).toMatch(
        /^(package\.json|pnpm-lock\.yaml|pnpm-workspace\.yaml|proto\/|libs\/|services\/\$\{SERVICE\}\/)/,
      );
    }
    // Every workspace lib a service may depend on is in the install stage.
    expect(dockerfile).toMatch(/^COPY libs\/ libs\/$/m);
  });

  it("runs as uid 65532 with node and the service's entry point", () => {
    expect(runtime).toMatch(/^USER 65532:65532$/m);
    const cmd = /^CMD (\[.*\])$/m.exec(runtime);
    expect(JSON.parse(cmd![1]!)).toEqual(["node", "src/main.ts"]);
  });

  it.each(SERVICE_NAMES)("%s: the CMD's file exists (services/<name>/src/main.ts)", (name) => {
    const workdir = [...runtime.matchAll(/^WORKDIR (\S+)$/gm)].at(-1)?.[1];
    expect(workdir).toBe(`/app/services/${SERVICE_ARG}`);
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(runtime)![1]!) as string[];
    const entry = join(ROOT, workdir!.replace("/app/", "").replace(SERVICE_ARG, name), cmd[1]!);
    expect(relative(ROOT, entry)).toBe(`services/${name}/src/main.ts`);
    expect(existsSync(entry), `${relative(ROOT, entry)} exists`).toBe(true);
  });
});

describe("deploy/compose", () => {
  it("builds every service from the one Dockerfile and Prometheus scrapes every metrics port", () => {
    const compose = readFileSync(join(ROOT, "deploy", "compose", "compose.yaml"), "utf8");
    const prometheus = readFileSync(join(ROOT, "deploy", "compose", "prometheus.yml"), "utf8");
    for (const [name, spec] of Object.entries(SERVICES)) {
      expect(compose).toContain(`SERVICE: ${name}`);
      expect(prometheus).toContain(`${name}:${spec.metricsPort}`);
    }
    expect(compose).toContain("dockerfile: deploy/docker/Dockerfile");
  });
});
