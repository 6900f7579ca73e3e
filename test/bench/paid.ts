/**
 * The paid-call part of the benchmark: what each way to pay adds to a call. n rounds of sequential
 * calls of block-number, each round one call per way, interleaved, on the same mesh and the local
 * chains: an API key; x402 `exact` (the official @x402/fetch client, settlement chain); MPP
 * `charge` (the official mppx client, a signed USDC.e transfer broadcast after the call) and MPP
 * `session` (mppx's session manager: one channel opened during warm-up, then one off-chain voucher
 * per call; closed at the end); x402 `x402-batch` (the official batch-settlement client: one
 * deposit during warm-up, then one off-chain voucher per call). Every paid call's receipt is
 * checked, and the receiver's balances against calls × price. Then, alone on the settlement chain,
 * `batchCalls` calls over one fresh x402-batch channel and the settlement worker's claim and settle
 * of them: every transaction the settlement chain mined meanwhile is counted.
 */
import { endpointById, priceAtomic } from "@tollgate/catalog";
import type { Devnet } from "@tollgate/devnet";
import type { Mesh } from "@tollgate/local";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { Receipt } from "mppx";
import { formatUnits, type PublicClient, toEventSelector } from "viem";
import { eventually } from "../support/eventually.ts";
import { mppChargePayer, mppSessionPayer, tempoChain, tip20Balance } from "../support/mppx.ts";
import { settlementClient, usdcBalance, x402Payer } from "../support/x402.ts";
import { batchPayer } from "../support/x402-batch.ts";

const PATH = "/api/chain/block-number";

/** payment-verifier's attempt limits out of the way: a benchmark measures paying, not refusing. */
export const UNLIMITED_ATTEMPTS = {
  PAYMENT_ATTEMPTS_PER_CLIENT_PER_SECOND: "100000",
  PAYMENT_ATTEMPTS_PER_CLIENT_BURST: "100000",
  PAYMENT_ATTEMPTS_PER_PAYER_PER_SECOND: "100000",
  PAYMENT_ATTEMPTS_PER_PAYER_BURST: "100000",
};
const WARMUP = 3;

interface Percentiles {
  p50: number;
  p95: number;
}

/** One way to pay, measured. */
interface PaidWay {
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
  /** The same with a key whose account pays from prepaid credits (a draw per call), and what that adds. */
  credits: { request_ms: Percentiles; added_over_api_key_ms: Percentiles };
  x402_exact: PaidWay;
  mpp_charge: PaidWay;
  mpp_session: PaidWay;
  x402_batch: PaidWay;
  x402_batch_onchain: BatchOnChain;
}

/** What x402-batch puts on the settlement chain. */
interface BatchOnChain {
  /** Sequential batch-paid calls over one fresh channel. */
  calls: number;
  /** Every transaction the settlement chain mined from the first call until the worker had settled them. */
  transactions: number;
  /** Of those, by kind: the deposit, claims, settles, refunds (from the escrow's logs). */
  kinds: Record<string, number>;
  transactions_per_1000_calls: number;
  /** When the worker claims (the bench mesh's settlement-worker settings). */
  worker: string;
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
  /** A key of a credits-only account with credits for every call. */
  creditsKey: string,
  n: number,
  batchCalls: number,
  batchWorker: string,
): Promise<PaidCallsReport> {
  const url = `${mesh.gatewayUrl}${PATH}`;
  const price = endpointById("blockNumber")?.price ?? "";
  const { settlement } = devnet.demo;
  const settlementChain = settlementClient(devnet);
  const tempoRpc = tempoChain(devnet).anvilRpcUrl;
  const usdce = devnet.demo.tempo.usdce.address;
  const x402PayTo = () => usdcBalance(settlementChain, devnet, settlement.payTo);
  const mppPayTo = () => tip20Balance(tempoRpc, usdce, devnet.demo.tempo.payTo);

  const keyCall = async (key = apiKey): Promise<number> => {
    const started = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    const ms = performance.now() - started;
    if (res.status !== 200) throw new Error(`API-key call answered ${res.status}`);
    if (key === creditsKey && !res.headers.has("x-credits-remaining"))
      throw new Error("the credits key's call was not paid from credits");
    return ms;
  };
  const x402 = x402Payer(devnet, "payer1");
  const batch = batchPayer(devnet, "payer4");
  const batchReceipt = (res: Response) => {
    const r = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
    return r.success && (r.extra as { chargedAmount?: string } | undefined)?.chargedAmount !== undefined;
  };
  const charge = mppChargePayer(devnet, "payer2", usdce);
  const session = mppSessionPayer(devnet, "payer3", "1");
  const mppReceipt = (res: Response) => Receipt.fromResponse(res).status === "success";
  const ways: Record<"x402_exact" | "mpp_charge" | "mpp_session" | "x402_batch", Pay> = {
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
    x402_batch: () =>
      timed(
        () => batch.fetch(url),
        batchReceipt,
        () => batch.paidMs.at(-1),
      ),
  };

  // Alone on the settlement chain first: then nothing else mines there while it is counted.
  const onchain = await measureBatchOnChain(
    url,
    devnet,
    settlementChain,
    batchCalls,
    priceAtomic(price, settlement.usdc.decimals),
    batchWorker,
  );
  const before = { x402: await x402PayTo(), mpp: await mppPayTo() };
  // Warm every path (JIT, keep-alive, the first settlement, the session's open) before measuring.
  for (let i = 0; i < WARMUP; i++) {
    await keyCall();
    await keyCall(creditsKey);
    for (const pay of Object.values(ways)) await pay();
  }
  const key: number[] = [];
  const credits: number[] = [];
  const samples = {
    x402_exact: [[], []],
    mpp_charge: [[], []],
    mpp_session: [[], []],
    x402_batch: [[], []],
  } as Record<keyof typeof ways, [number[], number[]]>;
  // Interleaved, so drift on the machine weighs on every side alike.
  for (let i = 0; i < n; i++) {
    key.push(await keyCall());
    credits.push(await keyCall(creditsKey));
    for (const [name, pay] of Object.entries(ways) as [keyof typeof ways, Pay][]) {
      const { total, request } = await pay();
      samples[name][0].push(request);
      samples[name][1].push(total);
    }
  }
  await session.manager.close();

  const calls = BigInt(n + WARMUP);
  // x402 exact's settlements; the batch payer's accruals stay in its channel until the worker claims.
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
    credits: { request_ms: percentiles(credits), added_over_api_key_ms: minus(percentiles(credits), keyP) },
    x402_exact: way("x402_exact", `${formatUnits(x402Settled, 6)} USDC`),
    mpp_charge: way("mpp_charge", `${perWay} USDC.e`),
    mpp_session: way("mpp_session", `${perWay} USDC.e (on close)`),
    x402_batch: way("x402_batch", `${perWay} USDC accrued (claimed by the settlement worker)`),
    x402_batch_onchain: onchain,
  };
}

/**
 * `calls` sequential x402-batch calls from a payer of their own over one channel, then waits until
 * the settlement worker has claimed and settled them (payTo received calls × price), and counts
 * every transaction the settlement chain mined in between, by kind.
 */
async function measureBatchOnChain(
  url: string,
  devnet: Devnet,
  chain: PublicClient,
  calls: number,
  price: bigint,
  worker: string,
): Promise<BatchOnChain> {
  const payer = batchPayer(devnet, "payer5");
  const payTo = () => usdcBalance(chain, devnet, devnet.demo.settlement.payTo);
  const before = await payTo();
  const first = (await chain.getBlockNumber({ cacheTime: 0 })) + 1n;
  for (let i = 0; i < calls; i++) {
    const res = await payer.fetch(url);
    if (res.status !== 200)
      throw new Error(`x402-batch call ${i} answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
  }
  const expected = before + BigInt(calls) * price;
  if ((await eventually(payTo, expected, 120_000, 500)) !== expected)
    throw new Error(`the worker did not settle ${calls} x402-batch calls in 2 minutes`);
  const last = await chain.getBlockNumber({ cacheTime: 0 });
  let transactions = 0;
  const kinds: Record<string, number> = {};
  for (let b = first; b <= last; b++) {
    const block = await chain.getBlock({ blockNumber: b, includeTransactions: true });
    for (const tx of block.transactions) {
      transactions++;
      const receipt = await chain.getTransactionReceipt({ hash: tx.hash });
      const names = new Set<string>();
      for (const log of receipt.logs) {
        const kind = BATCH_TOPICS[log.topics[0] ?? ""];
        if (kind) names.add(kind);
      }
      const kind = names.has("deposit")
        ? "deposit"
        : names.has("refund")
          ? "refund"
          : names.has("claim")
            ? "claim"
            : names.has("settle")
              ? "settle"
              : "other";
      kinds[kind] = (kinds[kind] ?? 0) + 1;
    }
  }
  return {
    calls,
    transactions,
    kinds,
    transactions_per_1000_calls: Math.round((transactions * 1000 * 10) / calls) / 10,
    worker,
  };
}

/** The escrow's event topics (keccak of the signatures) and what their transaction was. */
const BATCH_TOPICS: Record<string, string> = Object.fromEntries(
  (
    [
      ["Deposited(bytes32,address,uint128,uint128)", "deposit"],
      ["Claimed(bytes32,address,uint128,uint128)", "claim"],
      ["Settled(address,address,address,uint128)", "settle"],
      ["Refunded(bytes32,address,uint128)", "refund"],
    ] as const
  ).map(([signature, kind]) => [toEventSelector(signature), kind]),
);
