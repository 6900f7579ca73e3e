// Renders the kustomize trees with the real kubectl (offline): base, production and every component on
// top of base. Validates every object against the Kubernetes OpenAPI schemas (kubernetes-models), and
// checks the deployment non-negotiables:
// locked-down containers, probes on the right ports, Prometheus annotations, env names from each
// service's environment table (services/<name>/src/env.ts; the required ones all set), no secrets in
// the manifests, event outboxes on volumes that outlive the pod, and a Dockerfile whose entry point
// exists for each service.
// This file: each render's objects. The production overlay, components, secret examples, the
// The Dockerfile is in manifests-production.test.ts; the fixture in manifests.support.ts.
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Service } from "kubernetes-models/v1/Service";
import { describe, expect, it } from "vitest";
import { ENV_TABLES } from "../../deploy/env/tables.ts";
import {
  CUSTOM_KINDS,
  containerOf,
  containerPort,
  deployments,
  envValue,
  key,
  MODELS,
  NAMESPACE,
  named,
  ofKind,
  PUBLISHERS,
  renders,
  SERVICE_NAMES,
  SERVICES,
  secretExamples,
  strings,
  UID,
  useRenders,
} from "./manifests.support.ts";

useRenders();

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
