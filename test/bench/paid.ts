/**
 * The paid-call part of the benchmark: what each way to pay adds to a call. n rounds of sequential
 * calls of block-number, each round one call per way, interleaved, on the same mesh and the local
 * chains: an API key; x402 `exact` (the official @x402/fetch client, settlement chain); MPP
 * `charge` (the official mppx client, a signed USDC.e transfer broadcast after the call) and MPP
 * `session` (mppx's session manager: one channel opened during warm-up, then one off-chain voucher
 * per call; closed at the end). Every paid call's receipt is checked, and the receiver's balances
 * against calls × price.
 */
import { endpointById, priceAtomic } from "@tollgate/catalog";
import type { Devnet } from "@tollgate/devnet";
import type { Mesh } from "@tollgate/local";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { Receipt } from "mppx";
import { formatUnits } from "viem";
import { mppChargePayer, mppSessionPayer, tempoChain, tip20Balance } from "../support/mppx.ts";
import { settlementClient, usdcBalance, x402Payer } from "../support/x402.ts";

const PATH = "/api/chain/block-number";
const WARMUP = 3;

export interface Percentiles {
  p50: number;
  p95: number;
}

/** One way to pay, measured. */
export interface PaidWay {
  /** The request that carries the payment: verify + the call + settle (receipt awaited). */
  paid_request_ms: Percentiles;
  /** What the paying client waits in all: the 402 challenge, signing, then the paid request. */
  client_total_ms: Percentiles;
  /** Paid request minus the API-key call, per percentile: what this way of paying adds. */
  added_over_api_key_ms: Percentiles;
  /** What the receiver got over the run (checked against calls × price). */
  settled: string;
}

export interface PaidCallsReport {
  endpoint: string;
  price_usdc: string;
  calls: number;
  /** The call with `Authorization: Bearer <key>`. */
  api_key_ms: Percentiles;
  x402_exact: PaidWay;
  mpp_charge: PaidWay;
  mpp_session: PaidWay;
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

const minus = (a: Percentiles, b: Percentiles): Percentiles => ({
  p50: Math.round((a.p50 - b.p50) * 10) / 10,
  p95: Math.round((a.p95 - b.p95) * 10) / 10,
});

/** One paid call: its total time and the paid request's, after checking its answer. */
type Pay = () => Promise<{ total: number; request: number }>;

async function timed(
  call: () => Promise<Response>,
  receiptOk: (res: Response) => boolean,
  lastRequestMs: () => number | undefined,
) {
  const started = performance.now();
  const res = await call();
  const body = await res.text();
  const total = performance.now() - started;
  if (res.status !== 200 || !receiptOk(res)) {
    throw new Error(`paid call answered ${res.status}: ${body.slice(0, 300)}`);
  }
  return { total, request: lastRequestMs() ?? Number.NaN };
}

export async function measurePaidCalls(
  mesh: Mesh,
  devnet: Devnet,
  apiKey: string,
  n: number,
): Promise<PaidCallsReport> {
  const url = `${mesh.gatewayUrl}${PATH}`;
  const price = endpointById("blockNumber")?.price ?? "";
  const { settlement } = devnet.demo;
  const settlementChain = settlementClient(devnet);
  const tempoRpc = tempoChain(devnet).anvilRpcUrl;
  const usdce = devnet.demo.tempo.usdce.address;
  const x402PayTo = () => usdcBalance(settlementChain, devnet, settlement.payTo);
  const mppPayTo = () => tip20Balance(tempoRpc, usdce, devnet.demo.tempo.payTo);

  const keyCall = async (): Promise<number> => {
    const started = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${apiKey}` } });
    await res.arrayBuffer();
    const ms = performance.now() - started;
    if (res.status !== 200) throw new Error(`API-key call answered ${res.status}`);
    return ms;
  };
  const x402 = x402Payer(devnet, "payer1");
  const charge = mppChargePayer(devnet, "payer2", usdce);
  const session = mppSessionPayer(devnet, "payer3", "1");
  const mppReceipt = (res: Response) => Receipt.fromResponse(res).status === "success";
  const ways: Record<"x402_exact" | "mpp_charge" | "mpp_session", Pay> = {
    x402_exact: () =>
      timed(
        () => x402.fetch(url),
        (res) => decodePaymentResponseHeader(res.headers.get("payment-response") ?? "").success,
        () => x402.paid.at(-1)?.ms,
      ),
    mpp_charge: () =>
      timed(
        () => charge.fetch(url),
        mppReceipt,
        () => charge.ms.at(-1),
      ),
    mpp_session: () =>
      timed(
        () => session.manager.fetch(url),
        mppReceipt,
        () => session.ms.at(-1),
      ),
  };

  const before = { x402: await x402PayTo(), mpp: await mppPayTo() };
  // Warm every path (JIT, keep-alive, the first settlement, the session's open) before measuring.
  for (let i = 0; i < WARMUP; i++) {
    await keyCall();
    for (const pay of Object.values(ways)) await pay();
  }
  const key: number[] = [];
  const samples = { x402_exact: [[], []], mpp_charge: [[], []], mpp_session: [[], []] } as Record<
    keyof typeof ways,
    [number[], number[]]
  >;
  // Interleaved, so drift on the machine weighs on every side alike.
  for (let i = 0; i < n; i++) {
    key.push(await keyCall());
    for (const [name, pay] of Object.entries(ways) as [keyof typeof ways, Pay][]) {
      const { total, request } = await pay();
      samples[name][0].push(request);
      samples[name][1].push(total);
    }
  }
  await session.manager.close();

  const calls = BigInt(n + WARMUP);
  const x402Settled = (await x402PayTo()) - before.x402;
  const expectedX402 = calls * priceAtomic(price, settlement.usdc.decimals);
  if (x402Settled !== expectedX402)
    throw new Error(`x402 payTo received ${x402Settled} atomic units, expected ${expectedX402}`);
  // Charges and the closed session, both in USDC.e: twice the calls.
  const mppSettled = (await mppPayTo()) - before.mpp;
  const expectedMpp = 2n * calls * priceAtomic(price);
  if (mppSettled !== expectedMpp)
    throw new Error(`MPP payTo received ${mppSettled} atomic units, expected ${expectedMpp}`);

  const keyP = percentiles(key);
  const way = (name: keyof typeof ways, settled: string): PaidWay => {
    const request = percentiles(samples[name][0]);
    return {
      paid_request_ms: request,
      client_total_ms: percentiles(samples[name][1]),
      added_over_api_key_ms: minus(request, keyP),
      settled,
    };
  };
  const perWay = formatUnits(calls * priceAtomic(price), 6);
  return {
    endpoint: PATH,
    price_usdc: price,
    calls: n,
    api_key_ms: keyP,
    x402_exact: way("x402_exact", `${formatUnits(x402Settled, 6)} USDC`),
    mpp_charge: way("mpp_charge", `${perWay} USDC.e`),
    mpp_session: way("mpp_session", `${perWay} USDC.e (on close)`),
  };
}
