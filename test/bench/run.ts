/**
 * The benchmark (`pnpm bench`): load on loopback from a process of its own, and for every row
 * req/s, p50/p99 and the CPU each process spent per request (from /proc), in one run:
 *
 *   floor        one Node process serving block-number from its own silent anvil (envelope, no auth),
 *                node:http with a keep-alive Agent (the strong floor) and, as a second row, fetch
 *   node         eth_blockNumber sent straight to the mesh's ethereum node
 *   edge         the gateway alone (/api/networks: no hop, no node)
 *   mesh         block-number through the whole mesh with an API key
 *   credits      the same with a key whose account pays every call from prepaid credits (credit
 *                leases, as a plan's units are leased): `credits_added_over_plan` is what it adds
 *   json-rpc     eth_blockNumber through POST /rpc/ethereum with the same key: `json_rpc` is what
 *                it adds over the REST block-number row, and its CPU per request over the floor's
 *
 * then the ratios the performance issue sets goals on (mesh CPU per request ÷ the strong floor's,
 * throughput and p99 against it; the same against the fetch floor beside them), each service's
 * resident memory at ready, idle 30 s later and after the load, the latency each way to pay (x402 exact, MPP charge, MPP session,
 * x402-batch) adds over an API-key call, and the settlement-chain transactions per 1,000
 * x402-batch calls (their deposit, and the settlement worker's claims and settles).
 * Options: --duration s, --connections n, --paid n (sequential paid calls), --batch-calls n
 * (x402-batch calls counted on chain, default 1000), --out file.json,
 * --profile dir (CPU profiles of every service, written when the mesh stops), --bundles (the
 * services run from their bundles with their manifests' NODE_OPTIONS, as the pods run them; built
 * first, so they are the sources').
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  freePort,
  meshAdmin,
  type ServiceName,
  startMesh,
  startPrivateNats,
  startPrivateRedis,
} from "@tollgate/local";
import type autocannon from "autocannon";
import { formatUnits } from "viem";
import { ENV as WORKER_ENV } from "../../services/settlement-worker/src/env.ts";
import { buildBundles } from "../support/bundles.ts";
import { creditAsGateway } from "../support/credits.ts";
import { until } from "../support/eventually.ts";
import { manifestNodeOptions, POD_SERVICES } from "../support/pod-limits.ts";
import { load as loadFromOwnProcess } from "./loader.ts";
import { measurePaidCalls, UNLIMITED_ATTEMPTS } from "./paid.ts";
import { cpuMeter, pidListeningOn, residentMb } from "./proc.ts";

const argv = process.argv.slice(2);
const { values } = parseArgs({
  args: argv[0] === "--" ? argv.slice(1) : argv,
  options: {
    duration: { type: "string", default: "10" },
    connections: { type: "string", default: "32" },
    paid: { type: "string", default: "30" },
    "batch-calls": { type: "string", default: "1000" },
    out: { type: "string" },
    profile: { type: "string" },
    bundles: { type: "boolean", default: false },
  },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const here = fileURLToPath(new URL(".", import.meta.url));
const children: ChildProcess[] = [];
process.once("exit", () => {
  for (const c of children) c.kill("SIGKILL");
});

/** Loads with the run's duration and connections unless the options say otherwise. */
const load = (opts: autocannon.Options) => loadFromOwnProcess({ duration, connections, ...opts });

/** A silent anvil of the floor's own (no per-request log lines for anyone to read). */
async function quietAnvil(): Promise<{ url: string; pid: number }> {
  const { anvilBinary } = await import("@tollgate/devnet/anvil");
  const port = await freePort();
  const child = spawn(anvilBinary(), ["-q", "--port", String(port), "--host", "127.0.0.1"], {
    stdio: "ignore",
  });
  children.push(child);
  const url = `http://127.0.0.1:${port}`;
  await until(
    "the floor's anvil started",
    () =>
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      }).then(
        (r) => r.ok,
        () => false,
      ),
    30_000,
    50,
  );
  return { url, pid: child.pid ?? -1 };
}

async function startFloor(nodeUrl: string, client: "agent" | "fetch"): Promise<{ url: string; pid: number }> {
  const child = spawn(process.execPath, [join(here, "floor.ts"), nodeUrl, client], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const line = await new Promise<string>((resolve) =>
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once("line", resolve),
  );
  return { url: `http://127.0.0.1:${line.trim()}`, pid: child.pid ?? -1 };
}

interface Row {
  path: string;
  "req/s": number;
  "p50 ms": number;
  "p99 ms": number;
  non2xx: number;
  /** CPU µs per request, per process, and their total. */
  cpu_us_per_request: Record<string, number>;
}

async function measure(
  name: string,
  opts: autocannon.Options,
  processes: Record<string, number[]>,
): Promise<Row> {
  const meter = cpuMeter(processes);
  const r = await load(opts);
  const used = meter.stop();
  const requests = Math.max(1, r.requests.total);
  const perRequest = Object.fromEntries(
    Object.entries(used).map(([k, us]) => [k, Math.round(us / requests)]),
  );
  perRequest.total = Object.values(perRequest).reduce((a, b) => a + b, 0);
  return {
    path: name,
    "req/s": Math.round(r.requests.average),
    "p50 ms": r.latency.p50,
    "p99 ms": r.latency.p99,
    non2xx: r.non2xx + r.errors,
    cpu_us_per_request: perRequest,
  };
}

const stateDir = mkdtempSync(join(tmpdir(), "tollgate-bench-"));
const profileDir = values.profile ? resolve(values.profile) : undefined;
if (profileDir) mkdirSync(profileDir, { recursive: true });
// Redis and NATS of the bench's own, so their CPU is the mesh's alone (the machine's shared servers
// also carry whatever else runs here).
const [redis, nats] = await Promise.all([startPrivateRedis(), startPrivateNats()]);
// The bundles of these sources, not of whatever was built last.
if (values.bundles) buildBundles();
const profileOptions = profileDir ? `--cpu-prof --cpu-prof-dir=${profileDir}` : "";
/** A service's NODE_OPTIONS: the profiler's, and with --bundles its manifest's own, as its pod runs. */
function nodeOptions(service: ServiceName): Record<string, string> {
  const flags = [profileOptions, values.bundles ? (manifestNodeOptions(service) ?? "") : ""].join(" ").trim();
  return flags ? { NODE_OPTIONS: flags } : {};
}
const mesh = await startMesh({
  stateDir,
  // Quiet anvils, as the floor's: a node printing a line per call costs CPU in it and in the reader.
  quietNodes: true,
  // Errors only (the bench runs with logs at error level), so a failed row can be explained.
  onLine: (service, line) => process.stderr.write(`[${service}] ${line}\n`),
  env: {
    LOG_LEVEL: "warn",
    ACCESS_LOG: "false",
    REDIS_URL: redis.url,
    NATS_URL: nats.url,
  },
  serviceEnv: {
    ...Object.fromEntries(POD_SERVICES.map((s) => [s, nodeOptions(s)])),
    // The paid rows send calls back to back from one client and one payer (a thousand x402-batch
    // vouchers among them).
    "payment-verifier": { ...nodeOptions("payment-verifier"), ...UNLIMITED_ATTEMPTS },
  },
  bundles: values.bundles,
});
try {
  const devnet = mesh.devnet;
  if (!devnet) throw new Error("bench needs the devnet");
  const nodeUrl = devnet.chains.ethereum?.rpcUrl ?? "";
  const admin = meshAdmin(mesh);
  // Uncapped windows and a burst guard above the load: the bench measures serving, not refusing.
  const { secret } = await admin.quickstart("bench", { daily: 0, monthly: 0, burst: 1_000_000 });
  // A key whose account pays every call from prepaid credits: enough for any run (1,000 USDC).
  const drawing = await admin.quickstart("bench-credits", { burst: 1_000_000, creditsOnly: true });
  admin.close();
  await creditAsGateway(
    { stateDir, quotaMeterAddr: `127.0.0.1:${mesh.ports["quota-meter"].main}` },
    { apiKey: drawing.secret },
    1_000_000_000,
  );

  const floorNode = await quietAnvil();
  const floor = await startFloor(floorNode.url, "agent");
  const fetchFloor = await startFloor(floorNode.url, "fetch");
  const pid = (port: number) => [pidListeningOn(port) ?? -1];
  const services = {
    gateway: pid(mesh.ports.gateway.main),
    "quota-meter": pid(mesh.ports["quota-meter"].main),
    "rpc-proxy": pid(mesh.ports["rpc-proxy"].main),
    "payment-verifier": pid(mesh.ports["payment-verifier"].main),
    "settlement-worker": pid(mesh.ports["settlement-worker"].main),
    // The embedded PostgreSQL (PGlite) of `pnpm start`, or nothing when DATABASE_URL names a server.
    postgres: mesh.postgres?.child.pid ? [mesh.postgres.child.pid] : [],
    anvil: pid(devnet.chains.ethereum?.port ?? 0),
    "redis-server": [redis.process.child.pid ?? -1],
    "nats-server": [nats.process.child.pid ?? -1],
  };
  const blockNumber = {
    url: `${mesh.gatewayUrl}/api/chain/block-number`,
    headers: { authorization: `Bearer ${secret}` },
  };
  const creditsCall = { ...blockNumber, headers: { authorization: `Bearer ${drawing.secret}` } };
  const jsonRpcCall = {
    url: `${mesh.gatewayUrl}/rpc/ethereum`,
    method: "POST" as const,
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber" }),
  };
  const nodeCall = {
    url: nodeUrl,
    method: "POST" as const,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
  };

  // Resident memory of each process before it served anything: at ready, and idle once the work a
  // service starts when ready is done (the settlement worker's first scans of its chains and stores
  // take ~20 s and a transient 20 MB; after them it settles lower than at ready).
  const resident = { ...services, dashboard: pid(mesh.ports.dashboard.main) };
  const readyRss = residentMb(resident);
  // time-based: memory is measured after 30 s of idling (the measurement's definition).
  await new Promise((r) => setTimeout(r, 30_000));
  const idleRss = residentMb(resident);

  // Warm every path (JIT, keep-alive pools, the Lua script cache) before measuring.
  await Promise.all([
    load({ ...blockNumber, duration: 2 }),
    load({ ...creditsCall, duration: 2 }),
    load({ ...jsonRpcCall, duration: 2 }),
    load({ url: `${floor.url}/api/chain/block-number`, duration: 2 }),
    load({ url: `${fetchFloor.url}/api/chain/block-number`, duration: 2 }),
  ]);

  const rows = [
    await measure(
      "floor: node:http + keep-alive Agent, its own anvil",
      { url: `${floor.url}/api/chain/block-number` },
      { floor: [floor.pid], anvil: [floorNode.pid] },
    ),
    await measure(
      "floor: node:http + fetch, its own anvil",
      { url: `${fetchFloor.url}/api/chain/block-number` },
      { floor: [fetchFloor.pid], anvil: [floorNode.pid] },
    ),
    await measure("node directly (eth_blockNumber)", nodeCall, { anvil: services.anvil }),
    await measure(
      "gateway edge only (/api/networks)",
      { url: `${mesh.gatewayUrl}/api/networks` },
      { gateway: services.gateway },
    ),
    await measure("mesh + API key (block-number)", blockNumber, services),
    await measure("mesh + API key drawing credits (block-number)", creditsCall, services),
    await measure("mesh + API key, JSON-RPC (POST /rpc/ethereum eth_blockNumber)", jsonRpcCall, services),
  ];
  const [floorRow, fetchFloorRow, , , meshRow, creditsRow, jsonRpcRow] = rows as [
    Row,
    Row,
    Row,
    Row,
    Row,
    Row,
    Row,
  ];
  const loadedRss = residentMb(resident);
  const ratio = (a: number, b: number) => +(a / Math.max(b, 1e-9)).toFixed(2);
  const against = (floor: Row) => ({
    cpu_per_request: ratio(meshRow.cpu_us_per_request.total ?? 0, floor.cpu_us_per_request.total ?? 0),
    throughput: ratio(meshRow["req/s"], floor["req/s"]),
    p99: ratio(meshRow["p99 ms"], floor["p99 ms"]),
  });
  const report: Record<string, unknown> = {
    machine: `${cpus().length} cores, Node ${process.version}`,
    load: `${connections} connections, ${duration} s per row, loopback, load generator in its own process`,
    rows,
    against_floor: against(floorRow),
    against_fetch_floor: against(fetchFloorRow),
    resident_mb: { at_ready: readyRss, idle: idleRss, after_load: loadedRss },
    // Credit leases against unit leases: what paying from credits adds over a plan's call.
    credits_added_over_plan: {
      p50_ms: +(creditsRow["p50 ms"] - meshRow["p50 ms"]).toFixed(2),
      cpu_us_per_request:
        (creditsRow.cpu_us_per_request.total ?? 0) - (meshRow.cpu_us_per_request.total ?? 0),
    },
    // The JSON-RPC endpoint against the REST call it stands beside (same key, same node method),
    // and its CPU per request against the strong floor's.
    json_rpc: {
      p50_ms: +(jsonRpcRow["p50 ms"] - meshRow["p50 ms"]).toFixed(2),
      cpu_us_per_request:
        (jsonRpcRow.cpu_us_per_request.total ?? 0) - (meshRow.cpu_us_per_request.total ?? 0),
      cpu_per_request_against_floor: ratio(
        jsonRpcRow.cpu_us_per_request.total ?? 0,
        floorRow.cpu_us_per_request.total ?? 0,
      ),
    },
  };
  report.paid = await measurePaidCalls(
    mesh,
    devnet,
    secret,
    drawing.secret,
    Number(values.paid),
    Number(values["batch-calls"]),
    // The worker's defaults, read from its environment table (the one place they are written).
    `settlement-worker defaults: claim once ${formatUnits(
      BigInt(WORKER_ENV.vars.find((v) => v.name === "X402_BATCH_MIN_CLAIM_AMOUNT")?.default ?? "0"),
      6,
    )} USDC is unclaimed (nudged by the accrual events) or every claim interval, settle after each claim`,
  );

  console.table(
    rows.map((r) => ({
      path: r.path,
      "req/s": r["req/s"],
      "p50 ms": r["p50 ms"],
      "p99 ms": r["p99 ms"],
      non2xx: r.non2xx,
      "CPU µs/req": r.cpu_us_per_request.total,
    })),
  );
  console.log(JSON.stringify(report, null, 2));
  if (values.out) writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
  const non2xx = rows.reduce((sum, r) => sum + r.non2xx, 0);
  if (non2xx > 0) {
    console.error(`bench: ${non2xx} non-2xx responses`);
    process.exitCode = 1;
  }
} finally {
  for (const c of children) c.kill("SIGTERM");
  await mesh.stop();
  await Promise.all([redis.process.stop(), nats.process.stop()]);
  if (profileDir) console.log(`CPU profiles in ${profileDir}`);
}
