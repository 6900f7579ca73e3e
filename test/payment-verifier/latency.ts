// Verify and Settle latency of payment-verifier, as the gateway sees it (gRPC round trip on
// loopback; Redis, NATS JetStream, anvil and the in-process facilitator all real), for one scheme:
// - exact: payments signed beforehand by the official x402 client (8 payers), settled on the local
//   settlement chain;
// - x402-batch: one channel opened by the official client's deposit, then vouchers signed
//   beforehand with its signVoucher, sequential calls on that channel.
// Only the service is timed. Besides the round trips it prints the service's own time per call
// (its payment_verify_seconds / payment_settle_seconds: the rest is the gRPC hop) and the CPU this
// process spent per call. Run it under --cpu-prof to see where a call's time goes (the service runs
// in this process).
//   pnpm exec node test/payment-verifier/latency.ts [count=200] [--scheme exact|x402-batch]
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import type { Devnet } from "@tollgate/devnet";
import type { Registry } from "@tollgate/platform";
import type { PaymentPayload } from "@x402/core/types";
import { signVoucher } from "@x402/evm/batch-settlement/client";
import { batchPayer } from "../support/x402-batch.ts";
import {
  BLOCK_NUMBER,
  challenge,
  cleanUp,
  devnetConfig,
  type Header,
  headerGetter,
  pay,
  payer,
  priceOf,
  settle,
  startSettlementDevnet,
  startVerifier,
  uniqueId,
  type VerifierClient,
  verify,
} from "./support.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { scheme: { type: "string", default: "exact" } },
});
const SCHEMES = {
  exact: { label: "x402 exact on the local chain", what: "payments", sign: signExact },
  "x402-batch": { label: "x402-batch vouchers", what: "calls on one channel", sign: signVouchers },
} as const;
const scheme = SCHEMES[values.scheme as keyof typeof SCHEMES];
if (!scheme) throw new Error(`--scheme: expected one of ${Object.keys(SCHEMES).join(", ")}`);
const count = Number(positionals[0] ?? 200);
const WARMUP = 20;

/** `n` exact payments from 8 payers, each signed for its own call. */
async function signExact(devnet: Devnet, client: VerifierClient, n: number): Promise<Header[][]> {
  const payers = Array.from({ length: 8 }, (_, i) => payer(devnet, `payer${i + 1}`));
  const signed: Header[][] = [];
  for (let i = 0; i < n; i++) {
    signed.push((await pay(client, payers[i % payers.length]!, BLOCK_NUMBER)).credentials);
  }
  return signed;
}

/** A channel opened (deposit verified and settled here, untimed), then `n` vouchers continuing it. */
async function signVouchers(devnet: Devnet, client: VerifierClient, n: number): Promise<Header[][]> {
  const batch = batchPayer(devnet, "payer3");
  const encode = (payload: PaymentPayload): Header[] =>
    Object.entries(batch.http.encodePaymentSignatureHeader(payload)).map(([name, value]) => ({
      name,
      value,
    }));
  const required = batch.http.getPaymentRequiredResponse(headerGetter(await challenge(client, BLOCK_NUMBER)));
  const deposit = await batch.client.createPaymentPayload(required);
  const opened = await verify(client, BLOCK_NUMBER, encode(deposit));
  if (!opened.valid) throw new Error(`deposit refused: ${opened.reason}`);
  const paid = await settle(client, BLOCK_NUMBER, encode(deposit), opened.paymentId, opened.requestId);
  if (!paid.settled) throw new Error(`deposit not settled: ${paid.reason}`);
  const { deposit: _, ...voucherPayload } = deposit.payload as Record<string, unknown>;
  const channelId = (voucherPayload.voucher as { channelId: `0x${string}` }).channelId;
  const price = priceOf(BLOCK_NUMBER);
  const network = required.accepts[0]?.network ?? "";
  const signed: Header[][] = [];
  for (let i = 2; i < n + 2; i++) {
    const voucher = await signVoucher(batch.account, channelId, String(BigInt(i) * price), network);
    signed.push(encode({ ...deposit, payload: { ...voucherPayload, type: "voucher", voucher } }));
  }
  return signed;
}

function stats(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99), mean, max: sorted.at(-1) ?? Number.NaN };
}
const fmt = (s: ReturnType<typeof stats>) =>
  `p50 ${s.p50.toFixed(2)} ms  p95 ${s.p95.toFixed(2)} ms  p99 ${s.p99.toFixed(2)} ms  mean ${s.mean.toFixed(2)} ms  max ${s.max.toFixed(2)} ms`;

/** Seconds and observations of a payment-verifier histogram so far (all label sets). */
async function spent(registry: Registry, name: string): Promise<{ sum: number; count: number }> {
  const metric = await registry.getSingleMetric(name)?.get();
  let sum = 0;
  let n = 0;
  for (const v of (metric?.values ?? []) as { metricName?: string; value: number }[]) {
    if (v.metricName === `${name}_sum`) sum += v.value;
    if (v.metricName === `${name}_count`) n += v.value;
  }
  return { sum, count: n };
}

const namespace = uniqueId(`pvlatency${values.scheme?.replace(/\W/g, "")}`);
const devnet = await startSettlementDevnet();
const config = devnetConfig(devnet);
const { handle, client } = await startVerifier(config, { eventsNamespace: namespace });
try {
  const signed = await scheme.sign(devnet, client, count + WARMUP);
  const verifyMs: number[] = [];
  const settleMs: number[] = [];
  let cpu = process.cpuUsage();
  let inService = { verify: { sum: 0, count: 0 }, settle: { sum: 0, count: 0 } };
  for (const [i, credentials] of signed.entries()) {
    if (i === WARMUP) {
      cpu = process.cpuUsage();
      inService = {
        verify: await spent(handle.registry, "payment_verify_seconds"),
        settle: await spent(handle.registry, "payment_settle_seconds"),
      };
    }
    const t0 = performance.now();
    const v = await verify(client, BLOCK_NUMBER, credentials);
    const t1 = performance.now();
    if (!v.valid) throw new Error(`verify failed: ${v.reason}`);
    const s = await settle(client, BLOCK_NUMBER, credentials, v.paymentId, v.requestId);
    const t2 = performance.now();
    if (!s.settled) throw new Error(`settle failed: ${s.reason}`);
    if (i < WARMUP) continue; // JIT, connections, caches
    verifyMs.push(t1 - t0);
    settleMs.push(t2 - t1);
  }
  const used = process.cpuUsage(cpu);
  const own = async (name: string, before: { sum: number; count: number }) => {
    const after = await spent(handle.registry, name);
    return `${(((after.sum - before.sum) * 1000) / (after.count - before.count)).toFixed(2)} ms`;
  };
  console.log(
    `payment-verifier ${scheme.label}, ${count} sequential ${scheme.what} (after ${WARMUP} warm-up):`,
  );
  console.log(
    `  Verify  ${fmt(stats(verifyMs))}  (in the service: mean ${await own("payment_verify_seconds", inService.verify)})`,
  );
  console.log(
    `  Settle  ${fmt(stats(settleMs))}  (in the service: mean ${await own("payment_settle_seconds", inService.settle)})`,
  );
  // CPU is steadier than latency on a shared machine: it does not count time spent waiting for a core.
  const cpuUs = (used.user + used.system) / count;
  console.log(`  CPU     ${cpuUs.toFixed(0)} µs per call (this process: the gRPC client and the service)`);
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
