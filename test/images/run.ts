// `pnpm test:images` (after `pnpm images`): the whole mesh from the service images, one container
// per service (test/images/containers.ts: as k8s/base runs them) on the devnet's anvils and the
// machine's Redis, NATS and PostgreSQL, started by the local mesh's own code (startMesh with a
// container launcher). Then:
//   1. each container's idle memory, read inside it (its cgroup's usage and the process's RSS);
//   2. the vitest project "images" against that mesh: test/images/*.test.ts (posture, health, an
//      API-key call, the paid examples, Prometheus) and test/e2e's examples and dashboard suites;
//   3. throughput inside the limits: the same API-key load on the containers, then (after the stop)
//      on the same bundles as plain processes (test/images/throughput.ts); no container OOM-killed;
//   4. a graceful stop: SIGTERM to every container, each must log its drain and exit 0;
//   5. removes what `pnpm images` built (the images, the build cache; the base image stays, it is
//      remade only when missing) unless KEEP_IMAGES=1, and reports the disk used; then stops dockerd
//      if deploy/docker/machine.sh started it.
// Prints one line "test:images: PASS" or "test:images: FAIL (...)"; exits non-zero on failure.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Mesh, type ServiceName, startMesh } from "@tollgate/local";
import {
  DOCKER,
  docker,
  imageTag,
  imageTags,
  MACHINE,
  prepareDocker,
  ROOT,
  SERVICES,
} from "../../deploy/docker/images.ts";
import { createTestDatabase } from "../support/postgres.ts";
import { containerLauncher, manifestOf } from "./containers.ts";
import { apiKeyThroughput, startBundlesMesh } from "./throughput.ts";

const began = Date.now();
const failures: string[] = [];
const fail = (what: string) => {
  failures.push(what);
  console.error(`test:images: ${what}`);
};
const seconds = () => `${((Date.now() - began) / 1000).toFixed(0)} s`;
const gb = (bytes: number) => `${(bytes / 1e9).toFixed(2)} GB`;
const freeBytes = () => {
  const s = statfsSync(ROOT);
  return s.bavail * s.bsize;
};
// du's total, also when a container removed meanwhile makes it miss a file.
const dataRootBytes = (root: string) =>
  Number(spawnSync("du", ["-sb", root], { encoding: "utf8" }).stdout.split("\t")[0]);

prepareDocker();
const dataRoot = docker(["info", "-f", "{{.DockerRootDir}}"], { quiet: true }).trim();
const missing = SERVICES.filter((s) => {
  try {
    docker(["image", "inspect", imageTag(s)], { quiet: true });
    return false;
  } catch {
    return true;
  }
});
if (missing.length) {
  console.error(
    `test:images: FAIL (no image ${missing.map(imageTag).join(", ")}: run \`pnpm images\` first)`,
  );
  process.exit(1);
}
const sizes = Object.fromEntries(
  SERVICES.map((s) => [
    s,
    Number(docker(["image", "inspect", "-f", "{{.Size}}", imageTag(s)], { quiet: true })),
  ]),
);
const diskAtStart = dataRootBytes(dataRoot);
const freeAtStart = freeBytes();

const stateDir = mkdtempSync(join(tmpdir(), "tollgate-images-"));
const namespace = `img${process.pid}`;
const launcher = containerLauncher(String(process.pid), join(stateDir, "containers"));
const logFile = join(stateDir, "mesh.log");
const lines: string[] = [];
const database = await createTestDatabase(namespace);
let mesh: Mesh | undefined;
const memory: Record<string, { cgroupMiB: number; rssMiB: number; limit: string }> = {};
const exits: Record<string, number | null> = {};
const throughput: { images?: number; bundles?: number } = {};
const meshEnv = {
  // info: the drain's "draining" and "stopped" lines are checked at the end.
  LOG_LEVEL: "info",
  // No line per call, as in `pnpm bench`: the throughput step compares serving, and here every line
  // a container writes crosses dockerd's attach stream (a pod's runtime appends it to a file).
  ACCESS_LOG: "false",
  REDIS_BUDGET_MS: "2000",
  SIGN_UPS_PER_HOUR: "1000",
  DATABASE_URL: database.url,
};
try {
  console.log(`test:images: starting the mesh from ${SERVICES.map(imageTag).join(", ")}`);
  mesh = await startMesh({
    stateDir,
    namespace,
    env: meshEnv,
    launcher: launcher.launch,
    // vfs copies an image's whole filesystem for each new container: minutes on a loaded machine.
    readyTimeoutMs: 300_000,
    onLine: (service, line) => {
      lines.push(`[${service}] ${line}`);
      if (process.env.MESH_LOGS || /"level":(50|60)/.test(line))
        process.stderr.write(`[${service}] ${line}\n`);
    },
  });
  const started = mesh;
  if (!started.devnet) throw new Error("the images mesh must run on the devnet");
  const containers = Object.fromEntries(
    SERVICES.map((s) => [s, launcher.containers[s]?.at(-1) ?? `${launcher.label}-${s}-1`]),
  );
  console.log(`test:images: mesh up after ${seconds()}; gateway ${started.gatewayUrl}`);

  // Idle memory, inside each container: the cgroup's charge (what the limit is enforced on) and
  // the Node process's resident set.
  for (const service of SERVICES) {
    const out = execFileSync(
      DOCKER,
      [
        "exec",
        containers[service] ?? "",
        "sh",
        "-c",
        "cat /sys/fs/cgroup/memory.current 2>/dev/null || cat /sys/fs/cgroup/memory/memory.usage_in_bytes; grep VmRSS /proc/1/status",
      ],
      { encoding: "utf8" },
    );
    const [cgroup = "0", rss = ""] = out.trim().split("\n");
    memory[service] = {
      cgroupMiB: Number(cgroup) / 2 ** 20,
      rssMiB: Number(rss.replace(/\D+/g, "")) / 1024,
      limit: manifestOf(service).memory,
    };
  }

  const info = join(stateDir, "mesh.json");
  writeFileSync(
    info,
    JSON.stringify({
      mesh: {
        gatewayUrl: started.gatewayUrl,
        dashboardUrl: started.dashboardUrl,
        devnetFile: started.devnet.file,
        operatorToken: execFileSync("cat", [started.operatorTokenFile], { encoding: "utf8" }).trim(),
        quotaMeterAddr: `127.0.0.1:${started.ports["quota-meter"].main}`,
        settlementWorkerAddr: `127.0.0.1:${started.ports["settlement-worker"].main}`,
        databaseUrl: database.url,
        metricsUrls: Object.fromEntries(
          Object.entries(started.ports).map(([name, p]) => [name, `http://127.0.0.1:${p.metrics}/metrics`]),
        ),
        stateDir,
        eventsNamespace: namespace,
      },
      containers,
      ports: started.ports,
    }),
  );
  // Not spawnSync: this process serves the devnet (its anvils' output, the Tempo shim) meanwhile.
  const vitest = spawn(
    process.execPath,
    [join(ROOT, "node_modules/vitest/vitest.mjs"), "run", "--project", "images"],
    {
      cwd: ROOT,
      stdio: "inherit",
      env: { ...process.env, TOLLGATE_IMAGES_MESH: info },
    },
  );
  const status = await new Promise<number | null>((resolve) => vitest.once("exit", (code) => resolve(code)));
  if (status !== 0) fail(`the images suites failed (vitest exit ${status})`);

  throughput.images = await apiKeyThroughput(started, "images-load");
  // The load ran inside the manifests' limits: none of the containers may have been killed for it.
  for (const service of SERVICES) {
    const state = docker(
      ["inspect", "-f", "{{.State.Running}} {{.State.OOMKilled}}", containers[service] ?? ""],
      {
        quiet: true,
      },
    ).trim();
    if (state !== "true false") fail(`${service}'s container after the load: running/OOM-killed = ${state}`);
  }

  // Graceful stop: SIGTERM reaches each container's Node process (docker run passes it on), which
  // drains and exits 0. Edges first, as a rollout would.
  const order: ServiceName[] = [
    "dashboard",
    "gateway",
    "payment-verifier",
    "settlement-worker",
    "quota-meter",
    "rpc-proxy",
  ];
  for (const service of order) {
    const child = started.services[service].child;
    const exited = new Promise<number | null>((resolve) => {
      if (child.exitCode !== null) resolve(child.exitCode);
      else child.once("exit", (code) => resolve(code));
    });
    child.kill("SIGTERM");
    // The manifests' longest grace period; a drain that needs more is a failure.
    // time-based: the deadline of a race that fails the run ("timeout").
    const timeout = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 90_000).unref());
    const code = await Promise.race([exited, timeout]);
    exits[service] = code === "timeout" ? null : code;
    const logged = lines.filter((l) => l.startsWith(`[${service}] `));
    const drained =
      logged.some((l) => l.includes('"msg":"draining"')) && logged.some((l) => l.includes('"msg":"stopped"'));
    if (code !== 0 || !drained)
      fail(
        `${service} did not stop gracefully (exit ${code}, ${drained ? "drained" : "no draining/stopped lines"})`,
      );
  }
} catch (err) {
  fail(`${err instanceof Error ? err.stack : err}`);
} finally {
  await mesh?.stop().catch((err) => fail(`stopping the mesh: ${err}`));
  writeFileSync(logFile, `${lines.join("\n")}\n`);
  // Whatever a failure left running.
  const left = docker(["ps", "-aq", "--filter", `label=${launcher.label}`], { quiet: true })
    .split("\n")
    .filter(Boolean);
  // --rm removes them once stopped; a removal already under way is no error here.
  if (left.length) spawnSync(DOCKER, ["rm", "-f", ...left], { stdio: "ignore" });
  await database.drop().catch(() => {});
}

// The same load on the same bundles as plain processes, for the ratio (only after a clean run).
if (!failures.length) {
  const bundlesDir = mkdtempSync(join(tmpdir(), "tollgate-bundles-"));
  const bundlesDatabase = await createTestDatabase(`${namespace}b`);
  let bundles: Mesh | undefined;
  try {
    bundles = await startBundlesMesh({
      stateDir: bundlesDir,
      namespace: `${namespace}b`,
      env: { ...meshEnv, DATABASE_URL: bundlesDatabase.url },
    });
    throughput.bundles = await apiKeyThroughput(bundles, "bundles-load");
  } catch (err) {
    fail(`the bundles mesh for the throughput ratio: ${err instanceof Error ? err.stack : err}`);
  } finally {
    await bundles?.stop().catch(() => {});
    await bundlesDatabase.drop().catch(() => {});
    rmSync(bundlesDir, { recursive: true, force: true });
  }
}

const diskBeforeCleanup = dataRootBytes(dataRoot);
if (!process.env.KEEP_IMAGES) {
  docker(["rmi", ...SERVICES.flatMap(imageTags)], { quiet: true });
  docker(["builder", "prune", "-af"], { quiet: true });
}
const diskAfter = dataRootBytes(dataRoot);
// The daemon stops here only if this run's machine.sh started it (it keeps the base image).
if (!process.env.KEEP_IMAGES) execFileSync("bash", [MACHINE, "stop"], { stdio: "inherit" });

console.log("\ntest:images: image sizes and idle memory inside each container (limit = the manifest's)");
console.log("| service | image | idle cgroup memory | idle RSS | limit | exit on SIGTERM |");
console.log("|---|---|---|---|---|---|");
for (const service of SERVICES) {
  const m = memory[service];
  console.log(
    `| ${service} | ${(Number(sizes[service]) / 1e6).toFixed(0)} MB | ${m ? `${m.cgroupMiB.toFixed(0)} MiB` : "-"} | ${m ? `${m.rssMiB.toFixed(0)} MiB` : "-"} | ${manifestOf(service).memory} | ${exits[service] ?? "-"} |`,
  );
}
if (throughput.images && throughput.bundles)
  console.log(
    `test:images: API-key block-number, 32 connections, 10 s: ${throughput.images.toFixed(0)} req/s from the images ` +
      `inside their limits, ${throughput.bundles.toFixed(0)} req/s from the same bundles as processes: ` +
      `${(throughput.images / throughput.bundles).toFixed(2)}× (goal ≥ 0.95×)`,
  );
console.log(
  `test:images: disk: Docker's data (${dataRoot}) ${gb(diskAtStart)} at the start (images, build cache, base), ` +
    `${gb(diskBeforeCleanup)} after the run, ${gb(diskAfter)} after ${process.env.KEEP_IMAGES ? "(KEEP_IMAGES: nothing removed)" : "removing the images and the build cache"}; ` +
    `free on ${ROOT}: ${gb(freeAtStart)} at the start, ${gb(freeBytes())} now`,
);
if (failures.length) {
  console.log(`test:images: mesh log ${logFile}`);
  console.log(
    `test:images: FAIL (${failures.length}: ${failures.map((f) => f.split("\n")[0]).join("; ")}) in ${seconds()}`,
  );
  process.exit(1);
}
rmSync(stateDir, { recursive: true, force: true });
console.log(`test:images: PASS in ${seconds()}`);
process.exit(0);
