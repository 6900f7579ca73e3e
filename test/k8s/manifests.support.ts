// The fixture of the manifest suites (manifests.test.ts, manifests-production.test.ts): what each
// service's Deployment must carry, the Kubernetes models to validate against, kustomize rendered with
// the real kubectl (offline), and `useRenders()`, which renders base, production and production with
// the self-hosted facilitator once per file.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { DEFAULT_PORTS } from "@tollgate/platform";
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
import { afterAll, beforeAll, expect } from "vitest";
import { ENV_TABLES } from "../../deploy/env/tables.ts";

export const ROOT = resolve(import.meta.dirname, "../..");
export const K8S = join(ROOT, "k8s");
export const NAMESPACE = "tollgate";
export const UID = 65532;

export type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
} & Record<string, unknown>;

interface ServiceSpec {
  /** The port probes use: gRPC for the internal services, HTTP for the gateway and the dashboard. */
  protocol: "grpc" | "http";
  /** Whether the gateway calls it (the settlement worker's one API is the operator's). */
  calledByGateway?: boolean;
  port: number;
  metricsPort: number;
}

export const SERVICES: Record<string, ServiceSpec> = {
  gateway: {
    protocol: "http",
    port: DEFAULT_PORTS.gateway.http,
    metricsPort: DEFAULT_PORTS.gateway.metrics,
  },
  "quota-meter": {
    protocol: "grpc",
    calledByGateway: true,
    port: DEFAULT_PORTS["quota-meter"].grpc,
    metricsPort: DEFAULT_PORTS["quota-meter"].metrics,
  },
  "payment-verifier": {
    protocol: "grpc",
    calledByGateway: true,
    port: DEFAULT_PORTS["payment-verifier"].grpc,
    metricsPort: DEFAULT_PORTS["payment-verifier"].metrics,
  },
  "rpc-proxy": {
    protocol: "grpc",
    calledByGateway: true,
    port: DEFAULT_PORTS["rpc-proxy"].grpc,
    metricsPort: DEFAULT_PORTS["rpc-proxy"].metrics,
  },
  "settlement-worker": {
    protocol: "grpc",
    port: DEFAULT_PORTS["settlement-worker"].grpc,
    metricsPort: DEFAULT_PORTS["settlement-worker"].metrics,
  },
  dashboard: {
    protocol: "http",
    port: DEFAULT_PORTS.dashboard.http,
    metricsPort: DEFAULT_PORTS.dashboard.metrics,
  },
};
export const SERVICE_NAMES = Object.keys(SERVICES);

/** Schema-backed models for every built-in kind the manifests may contain. */
export const MODELS: Record<string, new (data: never) => { validate(): void }> = {
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
export const CUSTOM_KINDS = new Set([
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

export function kustomize(dir: string): Obj[] {
  return parseYaml(execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8" }));
}

export const key = (o: Obj) => `${o.apiVersion}/${o.kind}`;
export const ofKind = (objs: Obj[], kind: string) => objs.filter((o) => o.kind === kind);
/** Every service's workload: a Deployment, or a StatefulSet for a service with an event outbox. */
type Workload = Deployment | StatefulSet;
export const deployments = (objs: Obj[]): Workload[] => [
  ...ofKind(objs, "Deployment").map((o) => new Deployment(o as IDeployment)),
  ...ofKind(objs, "StatefulSet").map((o) => new StatefulSet(o as IStatefulSet)),
];
/** The services that publish events through an outbox (OUTBOX_DIR): their pods keep it on a volume of their own. */
export const PUBLISHERS = () =>
  Object.keys(SERVICES).filter((name) => ENV_TABLES[name]!.some((v) => v.name === "OUTBOX_DIR"));

export function named<T extends { metadata?: { name?: string } }>(list: T[], name: string): T {
  const found = list.find((o) => o.metadata?.name === name);
  if (!found) throw new Error(`no ${name} in ${list.map((o) => o.metadata?.name).join(", ")}`);
  return found;
}

export function containerOf(d: Workload): IContainer {
  const containers = d.spec?.template.spec?.containers ?? [];
  expect(containers, `${d.metadata?.name} runs one container`).toHaveLength(1);
  return containers[0]!;
}

export function envValue(c: IContainer, name: string): string | undefined {
  return c.env?.find((e) => e.name === name)?.value;
}

export function containerPort(c: IContainer, name: string): number | undefined {
  return c.ports?.find((p) => p.name === name)?.containerPort;
}

/** Every string anywhere in a value, for the secret scan. */
export function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === "object") return Object.values(value).flatMap(strings);
  return [];
}

let base: Obj[];
export let production: Obj[];
let selfHosted: Obj[];
export let redisCluster: Obj[];
export let secretExamples: Obj[];
let scratch: string;

/** Renders the trees before the file's tests; removes the throwaway overlay after. */
export function useRenders() {
  beforeAll(() => {
    base = kustomize(join(K8S, "base"));
    production = kustomize(join(K8S, "overlays", "production"));
    // Throwaway overlays: production plus one component each. kustomize only accepts relative paths
    // to other kustomization roots.
    scratch = mkdtempSync(join(tmpdir(), "tollgate-k8s-"));
    const withComponent = (component: string) => {
      const dir = join(scratch, component);
      mkdirSync(dir);
      const rel = (p: string) => relative(dir, join(K8S, p));
      writeFileSync(
        join(dir, "kustomization.yaml"),
        [
          "apiVersion: kustomize.config.k8s.io/v1beta1",
          "kind: Kustomization",
          "resources:",
          `  - ${rel("overlays/production")}`,
          "components:",
          `  - ${rel(`components/${component}`)}`,
          "",
        ].join("\n"),
      );
      return kustomize(dir);
    };
    selfHosted = withComponent("self-hosted-facilitator");
    redisCluster = withComponent("redis-cluster");
    secretExamples = parseYaml(readFileSync(join(K8S, "base", "secrets.example.yaml"), "utf8"));
  });

  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });
}

export const renders = () => ({
  base,
  production,
  "production + self-hosted-facilitator": selfHosted,
  "production + redis-cluster": redisCluster,
});
