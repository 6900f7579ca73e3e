/**
 * The benchmark: load on loopback, the gateway against the node called directly, in
 * one run, reported as ratios. `pnpm bench` (add `-- --duration 20` for longer runs).
 *
 * 1. Throughput and latency of block-number through the whole mesh with an API key
 *    versus eth_blockNumber sent straight to the same anvil node.
 * 2. The latency that x402 verify + settle add to a paid call on the local chain,
 *    versus the same call with an API key.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { meshAdmin, startMesh } from "@tollgate/local";
import autocannon from "autocannon";
import { measurePaidCalls } from "./paid.ts";

// `pnpm bench -- --duration 5`: pnpm passes the `--` separator through; it is not an argument.
const argv = process.argv.slice(2);
const { values } = parseArgs({
  args: argv[0] === "--" ? argv.slice(1) : argv,
  options: {
    duration: { type: "string", default: "10" },
    connections: { type: "string", default: "32" },
    paid: { type: "string", default: "30" },
    out: { type: "string" },
  },
});
const duration = Number(values.duration);
const connections = Number(values.connections);

const stateDir = mkdtempSync(join(tmpdir(), "tollgate-bench-"));
const mesh = await startMesh({ stateDir, env: { LOG_LEVEL: "error" } });
try {
  const devnet = mesh.devnet;
  if (!devnet) throw new Error("bench needs the devnet");
  const nodeUrl = devnet.chains.ethereum?.rpcUrl ?? "";

  // Uncapped windows and a burst guard above the load, so the bench measures serving, not refusing.
  const admin = meshAdmin(mesh);
  const { secret } = await admin.quickstart("bench", { daily: 0, monthly: 0, burst: 1_000_000 });
  admin.close();

  const run = (opts: autocannon.Options) =>
    new Promise<autocannon.Result>((resolve, reject) =>
      autocannon({ duration, connections, ...opts }, (err, result) => (err ? reject(err) : resolve(result))),
    );

  // Warm both paths (JIT, keep-alive pools, Lua script cache) before measuring.
  await run({
    url: `${mesh.gatewayUrl}/api/chain/block-number`,
    headers: { authorization: `Bearer ${secret}` },
    duration: 2,
  });

  const direct = await run({
    url: nodeUrl,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
  });
  const gateway = await run({
    url: `${mesh.gatewayUrl}/api/chain/block-number`,
    headers: { authorization: `Bearer ${secret}` },
  });
  // The edge alone (no gRPC hop, no node): separates the gateway's own cost from the mesh's.
  const edge = await run({ url: `${mesh.gatewayUrl}/api/networks` });
  const non2xx = gateway.non2xx + direct.non2xx + edge.non2xx;

  const row = (name: string, r: autocannon.Result) => ({
    path: name,
    "req/s": Math.round(r.requests.average),
    "mean ms": r.latency.average,
    "p50 ms": r.latency.p50,
    "p99 ms": r.latency.p99,
    errors: r.errors + r.non2xx,
  });
  const report: Record<string, unknown> = {
    machine: `${(await import("node:os")).cpus().length} cores, Node ${process.version}`,
    load: `${connections} connections, ${duration} s each, loopback`,
    throughput: [
      row("node direct (eth_blockNumber)", direct),
      row("gateway + API key (block-number)", gateway),
      row("gateway edge only (/api/networks)", edge),
    ],
    ratio: {
      throughput: +(gateway.requests.average / direct.requests.average).toFixed(3),
      // autocannon's percentiles are whole milliseconds (the node's p50 reads 0), so the
      // latency ratio uses the means, which it measures finer.
      mean_latency: +(gateway.latency.average / Math.max(direct.latency.average, 0.001)).toFixed(1),
    },
  };

  report.paid = await measurePaidCalls(mesh, devnet, secret, Number(values.paid));
  console.table(report.throughput as object[]);
  console.log(JSON.stringify(report, null, 2));
  if (values.out) writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
  if (non2xx > 0) {
    console.error(`bench: ${non2xx} non-2xx responses`);
    process.exitCode = 1;
  }
} finally {
  await mesh.stop();
}
