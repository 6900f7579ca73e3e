// The services as Kubernetes runs them, on this machine: one `docker run` per service of the image
// `pnpm images` built, shaped by the service's manifest in k8s/base (its user, read-only root
// filesystem, dropped capabilities, memory and CPU limits, NODE_OPTIONS, emptyDir volumes as tmpfs,
// secrets as read-only files at the paths the manifest mounts them). The environment is the one the
// local mesh writes (deploy/local/src/mesh.ts: devnet chains, free ports, namespace), with each
// secret the manifest mounts as a file turned into that file. Host network: the containers reach
// the machine's Redis, NATS, PostgreSQL and the devnet's anvils on loopback, on the mesh's ports.
import { chmodSync, chownSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import type { ServiceName } from "@tollgate/local";
import { parseAllDocuments } from "yaml";
import { DOCKER, imageTag } from "../../deploy/docker/images.ts";

const K8S_BASE = new URL("../../k8s/base/", import.meta.url);

interface EnvVar {
  name: string;
  value?: string;
}
interface Container {
  env?: EnvVar[];
  resources?: { limits?: { memory?: string; cpu?: string } };
  securityContext?: { runAsUser?: number; runAsGroup?: number; readOnlyRootFilesystem?: boolean };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface Volume {
  name: string;
  emptyDir?: { sizeLimit?: string };
  secret?: unknown;
}
interface Workload {
  kind: string;
  spec: { template: { spec: { containers: Container[]; volumes?: Volume[] } } };
}

export interface ServiceManifest {
  container: Container;
  volumes: Volume[];
  /** The manifest's value of an env variable it sets literally. */
  value(name: string): string | undefined;
  /** The container's memory limit in docker's notation (256Mi → 256m). */
  memory: string;
}

/** The Deployment or StatefulSet of `service` in k8s/base. */
export function manifestOf(service: ServiceName): ServiceManifest {
  const docs = parseAllDocuments(readFileSync(new URL(`${service}.yaml`, K8S_BASE), "utf8")).map(
    (d) => d.toJS() as Workload,
  );
  const workload = docs.find((d) => d && (d.kind === "Deployment" || d.kind === "StatefulSet"));
  const container = workload?.spec.template.spec.containers[0];
  if (!workload || !container) throw new Error(`k8s/base/${service}.yaml has no workload`);
  const memory = container.resources?.limits?.memory;
  if (!memory?.endsWith("Mi")) throw new Error(`${service}: memory limit ${memory} is not in Mi`);
  return {
    container,
    volumes: workload.spec.template.spec.volumes ?? [],
    value: (name) => container.env?.find((e) => e.name === name)?.value,
    memory: `${memory.slice(0, -2)}m`,
  };
}

export interface Launcher {
  label: string;
  launch(name: ServiceName, env: Record<string, string>): { command: string; args: string[] };
  /** The containers of a service, newest last (their names, for `docker exec` / `docker stats`). */
  containers: Record<string, string[]>;
}

/**
 * `launch` for startMesh: each service as `docker run` of its image. Secret files and env files go
 * to `dir` (readable by the containers' group only, as Kubernetes' defaultMode 0440 with fsGroup).
 */
export function containerLauncher(run: string, dir: string): Launcher {
  const label = `tollgate-images-${run}`;
  const containers: Record<string, string[]> = {};
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const launch = (name: ServiceName, meshEnv: Record<string, string>) => {
    const m = manifestOf(name);
    const user = m.container.securityContext?.runAsUser ?? 65532;
    const group = m.container.securityContext?.runAsGroup ?? user;
    const started = containers[name] ?? [];
    containers[name] = started;
    const n = started.length + 1;
    const container = `${label}-${name}-${n}`;
    started.push(container);
    const own = join(dir, `${name}-${n}`);
    mkdirSync(own, { recursive: true, mode: 0o750 });
    chownSync(own, 0, group);
    const env: Record<string, string> = { ...meshEnv };
    const mounts: string[] = [];
    // Secrets the manifest mounts as files (NAME_FILE=/var/run/secrets/...): the mesh gives either
    // a file of this host (NAME_FILE) or the value (NAME); either becomes that file, read-only.
    for (const { name: key, value } of m.container.env ?? []) {
      if (!key.endsWith("_FILE") || !value?.startsWith("/var/run/secrets/")) continue;
      const plain = key.slice(0, -"_FILE".length);
      const secret = env[key] ? readFileSync(env[key], "utf8") : env[plain];
      if (secret === undefined) continue;
      const file = join(own, `secret-${basename(value)}`);
      writeFileSync(file, secret);
      chownSync(file, 0, group);
      chmodSync(file, 0o440);
      mounts.push("-v", `${file}:${value}:ro`);
      delete env[plain];
      env[key] = value;
    }
    // The manifest's own literals win where the container needs them as written: the runtime's
    // flags and the paths of its volumes.
    for (const key of ["NODE_OPTIONS", "OUTBOX_DIR"]) {
      const value = m.value(key);
      if (value !== undefined) env[key] = value;
      else delete env[key];
    }
    for (const mount of m.container.volumeMounts ?? []) {
      const volume = m.volumes.find((v) => v.name === mount.name);
      if (volume?.emptyDir) {
        // emptyDir: tmpfs owned by the service user (fsGroup), at most its sizeLimit.
        const size = volume.emptyDir.sizeLimit?.replace(/Mi$/, "m") ?? "64m";
        mounts.push(
          "--tmpfs",
          `${mount.mountPath}:rw,nosuid,nodev,size=${size},uid=${user},gid=${group},mode=0770`,
        );
      } else if (!volume) {
        // A StatefulSet's volumeClaimTemplate (the event outbox): a directory of this host, owned
        // by the service user as fsGroup makes a claim's volume.
        const claim = join(own, `volume-${mount.name}`);
        mkdirSync(claim, { recursive: true, mode: 0o770 });
        chownSync(claim, user, group);
        mounts.push("-v", `${claim}:${mount.mountPath}`);
      }
    }
    // One variable a line, no value on the command line (ps would show it).
    const envFile = join(own, "env");
    writeFileSync(
      envFile,
      Object.entries(env)
        .map(([k, v]) => `${k}=${v}\n`)
        .join(""),
      { mode: 0o600 },
    );
    const cpu = m.container.resources?.limits?.cpu;
    const args = [
      "run",
      "--rm",
      "--name",
      container,
      "--label",
      label,
      "--network",
      "host",
      "--read-only",
      "--user",
      `${user}:${group}`,
      "--cap-drop",
      "ALL",
      "--security-opt",
      "no-new-privileges",
      "--memory",
      m.memory,
      // No swap beyond the limit: the OOM killer acts at the limit, as in a pod.
      "--memory-swap",
      m.memory,
      ...(cpu ? ["--cpus", cpu.endsWith("m") ? String(Number.parseInt(cpu, 10) / 1000) : cpu] : []),
      "--env-file",
      envFile,
      ...mounts,
      imageTag(name),
    ];
    return { command: DOCKER, args };
  };
  return { label, launch, containers };
}
