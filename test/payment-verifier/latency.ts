// Verify and Settle latency of payment-verifier on the local settlement chain, as the gateway sees
// it (gRPC round trip on loopback; Redis, NATS JetStream, anvil and the in-process facilitator all
// real). Payloads are signed beforehand by the official x402 client, so only the service is timed.
//   pnpm exec node test/payment-verifier/latency.ts [count=200]
import { dirname } from "node:path";
import {
  BLOCK_NUMBER,
  cleanUp,
  devnetConfig,
  type Header,
  pay,
  payer,
  settle,
  startSettlementDevnet,
  startVerifier,
  uniqueId,
  verify,
} from "./support.ts";

const count = Number(process.argv[2] ?? 200);
const namespace = uniqueId("pvlatency");
const devnet = await startSettlementDevnet();
const config = devnetConfig(devnet);
const { handle, client } = await startVerifier(config, { eventsNamespace: namespace });

function stats(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99), mean, max: sorted.at(-1) ?? Number.NaN };
}
const fmt = (s: ReturnType<typeof stats>) =>
  `p50 ${s.p50.toFixed(2)} ms  p95 ${s.p95.toFixed(2)} ms  p99 ${s.p99.toFixed(2)} ms  mean ${s.mean.toFixed(2)} ms  max ${s.max.toFixed(2)} ms`;

try {
  const payers = Array.from({ length: 8 }, (_, i) => payer(devnet, `payer${i + 1}`));
  const signed: Header[][] = [];
  for (let i = 0; i < count + 20; i++) {
    signed.push((await pay(client, payers[i % payers.length]!, BLOCK_NUMBER)).credentials);
  }
  const verifyMs: number[] = [];
  const settleMs: number[] = [];
  for (const [i, credentials] of signed.entries()) {
    const t0 = performance.now();
    const v = await verify(client, BLOCK_NUMBER, credentials);
    const t1 = performance.now();
    if (!v.valid) throw new Error(`verify failed: ${v.reason}`);
    const s = await settle(client, BLOCK_NUMBER, credentials, v.paymentId, v.requestId);
    const t2 = performance.now();
    if (!s.settled) throw new Error(`settle failed: ${s.reason}`);
    if (i < 20) continue; // warm-up: JIT, connections, caches
    verifyMs.push(t1 - t0);
    settleMs.push(t2 - t1);
  }
  console.log(
    `payment-verifier x402 exact on the local chain, ${count} sequential payments (after 20 warm-up):`,
  );
  console.log(`  Verify  ${fmt(stats(verifyMs))}`);
  console.log(`  Settle  ${fmt(stats(settleMs))}`);
} finally {
  client.close();
  await handle.stop();
  await devnet.stop();
  await cleanUp({
    redisPrefixes: [config.redisPrefix],
    namespace,
    outboxDirs: [config.outboxDir, dirname(devnet.file)],
  });
}
