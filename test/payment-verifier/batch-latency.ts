// Verify and Settle latency of payment-verifier for x402-batch vouchers, as the gateway sees it
// (gRPC round trip on loopback; Redis, NATS JetStream, anvil and the in-process facilitator all
// real). One channel is opened by the official client's deposit; the vouchers are signed beforehand
// with its signVoucher, so only the service is timed. Run it under --cpu-prof to see where a
// voucher's time goes (the service runs in this process).
//   pnpm exec node test/payment-verifier/batch-latency.ts [count=300]
import { dirname } from "node:path";
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
  priceOf,
  settle,
  startSettlementDevnet,
  startVerifier,
  uniqueId,
  verify,
} from "./support.ts";

const count = Number(process.argv[2] ?? 300);
const WARMUP = 20;
const namespace = uniqueId("pvbatchlatency");
const devnet = await startSettlementDevnet();
const config = devnetConfig(devnet);
const { handle, client } = await startVerifier(config, { eventsNamespace: namespace });

function stats(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return { p50: at(0.5), p95: at(0.95), max: sorted.at(-1) ?? Number.NaN };
}
const fmt = (s: ReturnType<typeof stats>) =>
  `p50 ${s.p50.toFixed(2)} ms  p95 ${s.p95.toFixed(2)} ms  max ${s.max.toFixed(2)} ms`;

try {
  const payer = batchPayer(devnet, "payer3");
  const encode = (payload: PaymentPayload): Header[] =>
    Object.entries(payer.http.encodePaymentSignatureHeader(payload)).map(([name, value]) => ({
      name,
      value,
    }));
  const required = payer.http.getPaymentRequiredResponse(headerGetter(await challenge(client, BLOCK_NUMBER)));
  const deposit = await payer.client.createPaymentPayload(required);
  const opened = await verify(client, BLOCK_NUMBER, encode(deposit));
  if (!opened.valid) throw new Error(`deposit refused: ${opened.reason}`);
  const paid = await settle(client, BLOCK_NUMBER, encode(deposit), opened.paymentId, opened.requestId);
  if (!paid.settled) throw new Error(`deposit not settled: ${paid.reason}`);
  const { deposit: _, ...voucherPayload } = deposit.payload as Record<string, unknown>;
  const channelId = (voucherPayload.voucher as { channelId: `0x${string}` }).channelId;
  const price = priceOf(BLOCK_NUMBER);
  const network = required.accepts[0]?.network ?? "";
  const signed: Header[][] = [];
  for (let i = 2; i < count + WARMUP + 2; i++) {
    const voucher = await signVoucher(payer.account, channelId, String(BigInt(i) * price), network);
    signed.push(encode({ ...deposit, payload: { ...voucherPayload, type: "voucher", voucher } }));
  }
  const verifyMs: number[] = [];
  const settleMs: number[] = [];
  let cpu = process.cpuUsage();
  for (const [i, credentials] of signed.entries()) {
    if (i === WARMUP) cpu = process.cpuUsage();
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
  console.log(
    `payment-verifier x402-batch vouchers, ${count} sequential calls on one channel (after ${WARMUP} warm-up):`,
  );
  console.log(`  Verify  ${fmt(stats(verifyMs))}`);
  console.log(`  Settle  ${fmt(stats(settleMs))}`);
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
