// The services' Kubernetes limits on this machine: a cgroup v1 memory group per service at the limit
// its k8s/base manifest sets, for `startMesh({ cgroups })` (a process started inside one sees the
// limit as in a pod: Node sizes its heap from it), and the manifest's NODE_OPTIONS. Used by
// `pnpm bench:memory` and `pnpm chaos --soak … --limits`. Needs root and /sys/fs/cgroup/memory.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ServiceName } from "@tollgate/local";
import { parseAllDocuments } from "yaml";

const CGROUP_ROOT = "/sys/fs/cgroup/memory";
const K8S_BASE = fileURLToPath(new URL("../../k8s/base/", import.meta.url));

export const POD_SERVICES: ServiceName[] = [
  "gateway",
  "rpc-proxy",
  "quota-meter",
  "payment-verifier",
  "settlement-worker",
  "dashboard",
];

interface Container {
  env?: { name: string; value?: string }[];
  resources?: { limits?: { memory?: string } };
}

/** The first container of the service's Deployment (or StatefulSet) in k8s/base. */
function container(service: ServiceName): Container {
  const docs = parseAllDocuments(readFileSync(join(K8S_BASE, `${service}.yaml`), "utf8"));
  for (const doc of docs) {
    const workload = doc.toJS() as {
      kind?: string;
      spec?: { template?: { spec?: { containers?: Container[] } } };
    };
    if (workload.kind !== "Deployment" && workload.kind !== "StatefulSet") continue;
    const first = workload.spec?.template?.spec?.containers?.[0];
    if (first) return first;
  }
  throw new Error(`k8s/base/${service}.yaml has no workload`);
}

/** The container memory limit the service's manifest sets, in bytes ("256Mi" → 268435456). */
function manifestLimit(service: ServiceName): number {
  const match = /^(\d+)(Mi|Gi)$/.exec(container(service).resources?.limits?.memory ?? "");
  if (!match) throw new Error(`k8s/base/${service}.yaml sets no memory limit`);
  return Number(match[1]) * (match[2] === "Gi" ? 1024 ** 3 : 1024 ** 2);
}

/** The NODE_OPTIONS the service's manifest sets (its heap flags), if any. */
export function manifestNodeOptions(service: ServiceName): string | undefined {
  return container(service).env?.find((e) => e.name === "NODE_OPTIONS")?.value;
}

/** One memory cgroup per service at its manifest's limit; `remove` once the processes are gone. */
export function podCgroups(prefix: string) {
  if (!existsSync(`${CGROUP_ROOT}/cgroup.procs`))
    throw new Error(`pod limits need the cgroup v1 memory controller at ${CGROUP_ROOT} (and root)`);
  const limits = Object.fromEntries(POD_SERVICES.map((s) => [s, manifestLimit(s)])) as Record<
    ServiceName,
    number
  >;
  const dirs: Partial<Record<ServiceName, string>> = {};
  for (const s of POD_SERVICES) {
    const dir = `${CGROUP_ROOT}/${prefix}-${s}`;
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/memory.limit_in_bytes`, String(limits[s]));
    writeFileSync(`${dir}/memory.max_usage_in_bytes`, "0"); // a reused group's peak starts again
    dirs[s] = dir;
  }
  const oomKills = (dir: string) =>
    Number(/^oom_kill (\d+)$/m.exec(readFileSync(`${dir}/memory.oom_control`, "utf8"))?.[1] ?? 0);
  return {
    cgroups: dirs,
    limitsMb: Object.fromEntries(POD_SERVICES.map((s) => [s, Math.round(limits[s] / 1024 ** 2)])),
    /** OOM kills so far in each service's group. */
    oomKills: (): Record<string, number> =>
      Object.fromEntries(POD_SERVICES.map((s) => [s, oomKills(dirs[s] as string)])),
    /** The most memory each group has held (its processes' RSS and page cache), MB. */
    peakMb: (): Record<string, number> =>
      Object.fromEntries(
        POD_SERVICES.map((s) => [
          s,
          Math.round(Number(readFileSync(`${dirs[s]}/memory.max_usage_in_bytes`, "utf8")) / 1024 ** 2),
        ]),
      ),
    remove(): void {
      for (const dir of Object.values(dirs)) {
        try {
          rmdirSync(dir);
        } catch {
          // a process still inside: the next run reuses the directory
        }
      }
    },
  };
}
