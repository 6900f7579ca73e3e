// The mesh `pnpm test:images` started from the service images (test/images/run.ts): each container
// runs as its manifest in k8s/base says, answers its health checks, and serves what a user does
// (an API-key call, the paid examples), scraped by a real Prometheus. The examples test/e2e runs
// (example:viem) and the dashboard's sign-in in Chromium run against the same containers.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { checkHealth } from "@tollgate/platform";
import { afterAll, describe, expect, it } from "vitest";
import { DOCKER } from "../../deploy/docker/images.ts";
import { createAccountWithKey } from "../support/accounts.ts";
import { eventually } from "../support/eventually.ts";
import { mesh } from "../support/gateway.ts";
import { type Prometheus, startPrometheus } from "../support/prometheus.ts";
import { runProcess } from "../support/run-process.ts";
import { manifestOf } from "./containers.ts";

interface ImagesRun {
  containers: Record<string, string>;
  ports: Record<string, { main: number; metrics: number }>;
}
const run = JSON.parse(readFileSync(process.env.TOLLGATE_IMAGES_MESH ?? "", "utf8")) as ImagesRun;
type ServiceName = Parameters<typeof manifestOf>[0];
const SERVICES = Object.keys(run.containers) as ServiceName[];

const docker = (...args: string[]) => execFileSync(DOCKER, args, { encoding: "utf8" }).trim();
const inContainer = (service: string, script: string) =>
  runProcess(DOCKER, ["exec", run.containers[service] ?? "", "sh", "-c", script], {
    cwd: "/",
    env: process.env,
  });

describe("the images, run as k8s/base runs them", () => {
  it("runs six containers, one per service", () => {
    expect(SERVICES.sort()).toEqual(
      ["dashboard", "gateway", "payment-verifier", "quota-meter", "rpc-proxy", "settlement-worker"].sort(),
    );
  });

  it.each(SERVICES)(
    "%s: non-root, read-only root filesystem, the manifest's memory limit and NODE_OPTIONS",
    async (service) => {
      const m = manifestOf(service);
      const inspected = JSON.parse(docker("inspect", run.containers[service] ?? "")) as {
        Config: { User: string };
        HostConfig: { ReadonlyRootfs: boolean; Memory: number };
      }[];
      const [info] = inspected;
      expect(info?.Config.User).toBe(
        `${m.container.securityContext?.runAsUser}:${m.container.securityContext?.runAsGroup}`,
      );
      expect(info?.HostConfig.ReadonlyRootfs).toBe(true);
      expect(info?.HostConfig.Memory).toBe(Number.parseInt(m.memory, 10) * 1024 * 1024);
      const id = await inContainer(
        service,
        "id -u; tr '\\0' ' ' </proc/1/environ | tr ' ' '\\n' | grep ^NODE_OPTIONS= || true",
      );
      expect(id.stdout.split("\n")[0]).toBe(String(m.container.securityContext?.runAsUser));
      const nodeOptions = m.value("NODE_OPTIONS");
      if (nodeOptions) expect(id.stdout).toContain(`NODE_OPTIONS=${nodeOptions}`);
      // The image's own files cannot be changed; /tmp (an emptyDir in the pod) can.
      const write = await inContainer(
        service,
        "touch /app/probe 2>&1; echo rc=$?; touch /tmp/probe && echo tmp=ok",
      );
      expect(write.stdout).toMatch(/Read-only file system[\s\S]*rc=1/);
      expect(write.stdout).toContain("tmp=ok");
    },
  );

  it.each(SERVICES)("%s: answers the health check its probes use", async (service) => {
    const port = run.ports[service]?.main;
    if (service === "gateway" || service === "dashboard") {
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    } else {
      expect(await checkHealth(`127.0.0.1:${port}`)).toBe(true);
    }
  });

  it("holds no TypeScript source, test or package manager in any image", async () => {
    for (const service of SERVICES) {
      const found = await inContainer(
        service,
        "find /app -path '*/node_modules' -prune -o \\( -name '*.ts' -o -name '*.test.*' \\) -print; command -v pnpm npm corepack; ls -d /root/.npm /root/.local/share/pnpm /pnpm 2>/dev/null; true",
      );
      expect(found.stdout.trim(), service).toBe("");
    }
  });
});

describe("what a user does, against the containers", () => {
  it("serves an API-key call through /rpc/ethereum", async () => {
    const { apiKey } = await createAccountWithKey();
    const res = await fetch(`${mesh.gatewayUrl}/rpc/ethereum`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { result: string }).result).toMatch(/^0x[0-9a-f]+$/);
  });

  const example = (file: string) =>
    runProcess(process.execPath, [`examples/${file}`], {
      cwd: new URL("../", import.meta.url).pathname,
      env: {
        PATH: process.env.PATH,
        GATEWAY_URL: mesh.gatewayUrl,
        // The examples other than viem name the gateway by its port, as `pnpm start` serves it.
        PORT: new URL(mesh.gatewayUrl).port,
        DEVNET_FILE: mesh.devnetFile,
        OPERATOR_TOKEN: mesh.operatorToken,
        QUOTA_METER_ADDR: mesh.quotaMeterAddr,
      },
    });

  it("example:x402 pays one call with @x402/fetch", { timeout: 180_000 }, async () => {
    const out = await example("pay-with-x402.ts");
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^200 /m);
    expect(out.stdout).toMatch(/^PAYMENT-RESPONSE: \S+/m);
  });

  it("example:mpp pays a charge and a session with mppx", { timeout: 180_000 }, async () => {
    const out = await example("pay-with-mpp.ts");
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^Payment-Receipt: \S+/m);
    expect(out.stdout.match(/^session call /gm)).toHaveLength(3);
  });

  it("example:x402-batch pays 100 calls over one channel and refunds the rest", {
    timeout: 180_000,
  }, async () => {
    const out = await example("pay-with-x402-batch.ts");
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^100 calls paid over one channel: [1-9]\d* atomic units/m);
    expect(out.stdout).toMatch(/^refund: \d+ atomic units of USDC back to the payer in 0x[0-9a-f]{64}/m);
  });

  it("example:credits buys credits and spends them with a key", { timeout: 180_000 }, async () => {
    const out = await example("credits.ts");
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^top-up 200 /m);
    expect(out.stdout).toMatch(/^wallet top-up 200 /m);
  });
});

describe("observability", () => {
  let prometheus: Prometheus | undefined;
  afterAll(() => prometheus?.stop());

  it("Prometheus scrapes every container's /metrics", { timeout: 120_000 }, async () => {
    prometheus = await startPrometheus({
      targets: Object.fromEntries(SERVICES.map((s) => [s, `127.0.0.1:${run.ports[s]?.metrics}`])),
      ruleFiles: [],
    });
    const p = prometheus;
    const up = await eventually(
      async () => (await p.query("up == 1")).map((s) => s.metric.job ?? "").sort(),
      (jobs) => jobs.length === SERVICES.length,
      60_000,
      500,
    );
    expect(up).toEqual([...SERVICES].sort());
    // Each service's own process metrics, read from inside its container.
    const resident = await p.query("process_resident_memory_bytes");
    expect(resident.map((s) => s.metric.job).sort()).toEqual([...SERVICES].sort());
  });
});
