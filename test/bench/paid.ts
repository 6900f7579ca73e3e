/**
 * The paid-call part of the benchmark: what x402 verify + settle add to a call. n sequential
 * calls of block-number paid with the official @x402/fetch client, interleaved with n sequential
 * calls of the same endpoint with an API key, on the same mesh and the local settlement chain.
 */
import { endpointById, priceAtomic } from "@tollgate/catalog";
import type { Devnet } from "@tollgate/devnet";
import type { Mesh } from "@tollgate/local";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { formatUnits } from "viem";
import { settlementClient, usdcBalance, x402Payer } from "../support/x402.ts";

const PATH = "/api/chain/block-number";
const WARMUP = 3;

export interface Percentiles {
  p50: number;
  p95: number;
}

export interface PaidCallsReport {
  endpoint: string;
  price_usdc: string;
  calls: number;
  /** The call with `Authorization: Bearer <key>`. */
  api_key_ms: Percentiles;
  /** The request that carries PAYMENT-SIGNATURE: verify + the call + settle (receipt awaited). */
  x402_paid_request_ms: Percentiles;
  /** What the paying client waits in all: the 402 challenge, signing, then the paid request. */
  x402_client_total_ms: Percentiles;
  /** Paid request minus API-key call, per percentile: the cost of verify + settle on the local chain. */
  added_by_verify_settle_ms: Percentiles;
  /** payTo's balance change over the run, checked against calls × price. */
  settled_usdc: string;
}

/** Nearest-rank percentile, in ms rounded to 0.1. */
function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Math.round((sorted[rank] ?? Number.NaN) * 10) / 10;
}

function percentiles(samples: number[]): Percentiles {
  return { p50: percentile(samples, 50), p95: percentile(samples, 95) };
}

export async function measurePaidCalls(
  mesh: Mesh,
  devnet: Devnet,
  apiKey: string,
  n: number,
): Promise<PaidCallsReport> {
  const url = `${mesh.gatewayUrl}${PATH}`;
  const price = endpointById("blockNumber")?.price ?? "";
  const payer = x402Payer(devnet, "payer1");
  const chain = settlementClient(devnet);
  const payTo = devnet.demo.settlement.payTo;
  const payToBefore = await usdcBalance(chain, devnet, payTo);

  const keyCall = async (): Promise<number> => {
    const started = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${apiKey}` } });
    await res.arrayBuffer();
    const ms = performance.now() - started;
    if (res.status !== 200) throw new Error(`API-key call answered ${res.status}`);
    return ms;
  };
  const paidCall = async (): Promise<{ total: number; request: number }> => {
    const started = performance.now();
    const res = await payer.fetch(url);
    const body = await res.text();
    const total = performance.now() - started;
    const receipt = res.headers.get("payment-response");
    if (res.status !== 200 || !receipt || !decodePaymentResponseHeader(receipt).success) {
      throw new Error(`paid call answered ${res.status}: ${body.slice(0, 300)}`);
    }
    const request = payer.paid.at(-1)?.ms ?? Number.NaN;
    return { total, request };
  };

  // Warm both paths (JIT, keep-alive, the facilitator's first settlement) before measuring.
  for (let i = 0; i < WARMUP; i++) {
    await keyCall();
    await paidCall();
  }
  const key: number[] = [];
  const paidRequest: number[] = [];
  const paidTotal: number[] = [];
  // Interleaved, so drift on the machine weighs on both sides alike.
  for (let i = 0; i < n; i++) {
    key.push(await keyCall());
    const paid = await paidCall();
    paidRequest.push(paid.request);
    paidTotal.push(paid.total);
  }

  const settled = (await usdcBalance(chain, devnet, payTo)) - payToBefore;
  const expected = BigInt(n + WARMUP) * priceAtomic(price, devnet.demo.settlement.usdc.decimals);
  if (settled !== expected) throw new Error(`payTo received ${settled} atomic units, expected ${expected}`);

  const keyP = percentiles(key);
  const requestP = percentiles(paidRequest);
  return {
    endpoint: PATH,
    price_usdc: price,
    calls: n,
    api_key_ms: keyP,
    x402_paid_request_ms: requestP,
    x402_client_total_ms: percentiles(paidTotal),
    added_by_verify_settle_ms: {
      p50: Math.round((requestP.p50 - keyP.p50) * 10) / 10,
      p95: Math.round((requestP.p95 - keyP.p95) * 10) / 10,
    },
    settled_usdc: formatUnits(settled, devnet.demo.settlement.usdc.decimals),
  };
}
