/**
 * What an x402-batch voucher call adds over an API-key call, end to end, without the rest of the
 * benchmark: a mesh of its own on the embedded default (private Redis and NATS, as `pnpm bench`),
 * then n rounds of block-number, each round an API-key call and a voucher call (the official
 * batch-settlement client; one deposit during warm-up) back to back from this process. Reports the
 * p50/p95 of each, of the difference of their p50s (what `pnpm bench` reports) and of the
 * per-round differences.
 *   pnpm exec node test/bench/batch-added.ts [rounds=300]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { meshAdmin, startMesh, startPrivateNats, startPrivateRedis } from "@tollgate/local";
import { batchPayer } from "../support/x402-batch.ts";
import { UNLIMITED_ATTEMPTS } from "./paid.ts";

const rounds = Number(process.argv[2] ?? 300);
const WARMUP = 20;
const PATH = "/api/chain/block-number";

const at = (samples: number[], q: number) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};
const fmt = (samples: number[]) =>
  `p50 ${at(samples, 0.5).toFixed(2)} ms  p95 ${at(samples, 0.95).toFixed(2)} ms`;

const stateDir = mkdtempSync(join(tmpdir(), "tollgate-batch-added-"));
const [redis, nats] = await Promise.all([startPrivateRedis(), startPrivateNats()]);
const mesh = await startMesh({
  stateDir,
  onLine: (service, line) => process.stderr.write(`[${service}] ${line}\n`),
  env: { LOG_LEVEL: "warn", ACCESS_LOG: "false", REDIS_URL: redis.url, NATS_URL: nats.url },
  // Calls back to back from one client and one payer.
  serviceEnv: { "payment-verifier": UNLIMITED_ATTEMPTS },
});
try {
  const devnet = mesh.devnet;
  if (!devnet) throw new Error("this harness needs the devnet");
  const admin = meshAdmin(mesh);
  const { secret } = await admin.quickstart("batch-added", { daily: 0, monthly: 0, burst: 1_000_000 });
  admin.close();
  const url = `${mesh.gatewayUrl}${PATH}`;
  const keyCall = async (): Promise<number> => {
    const started = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${secret}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`API-key call answered ${res.status}`);
    return performance.now() - started;
  };
  const payer = batchPayer(devnet, "payer4");
  const batchCall = async (): Promise<number> => {
    const res = await payer.fetch(url);
    const body = await res.text();
    if (res.status !== 200 || !res.headers.get("payment-response"))
      throw new Error(`voucher call answered ${res.status}: ${body.slice(0, 300)}`);
    return payer.paidMs.at(-1) ?? Number.NaN;
  };
  const key: number[] = [];
  const paid: number[] = [];
  const diff: number[] = [];
  for (let i = 0; i < rounds + WARMUP; i++) {
    const k = await keyCall();
    const p = await batchCall();
    if (i < WARMUP) continue; // the deposit, JIT, keep-alive, leases
    key.push(k);
    paid.push(p);
    diff.push(p - k);
  }
  console.log(`block-number, ${rounds} rounds (after ${WARMUP} warm-up), one process, back to back:`);
  console.log(`  API key          ${fmt(key)}`);
  console.log(`  x402-batch paid  ${fmt(paid)}`);
  console.log(`  added (p50 − p50) ${(at(paid, 0.5) - at(key, 0.5)).toFixed(2)} ms`);
  console.log(`  added per round  ${fmt(diff)}`);
} finally {
  await mesh.stop();
  await Promise.all([redis.process.stop(), nats.process.stop()]);
  rmSync(stateDir, { recursive: true, force: true });
}
