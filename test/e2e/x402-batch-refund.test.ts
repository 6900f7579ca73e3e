// x402-batch money back: the unmodified official batch-settlement client's cooperative refund
// (`refund()` of its client scheme) against a mesh of its own (every service its own process), on
// the shared devnet's settlement chain. payment-verifier answers the request; the settlement worker,
// the one claimer, sends it on its next pass (every 0.5 s here): one transaction claims what the
// channel was charged and returns the rest. Idle refunds are off in this mesh, so every refund seen
// here is the one a payer asked for. Then the ways a refund could be turned against Tollgate:
// another wallet asking, an old voucher, a replay, a voucher after the refund, a channel with
// nothing left; none is served, none sends a transaction. And a payer making us pay gas (issue 40):
// refunds of many amounts, in turn and at once, on two channels of one payer, counted on chain from
// the escrow's Refunded logs (at most one per deposit); a refund below the minimum (its gas).
import { readFileSync } from "node:fs";
import { priceAtomic } from "@tollgate/catalog";
import { createLedgerClient } from "@tollgate/cli/clients/settlement-admin";
import { readDevnetFile } from "@tollgate/devnet";
import type { Mesh } from "@tollgate/local";
import {
  decodePaymentRequiredHeader,
  decodePaymentSignatureHeader,
  encodePaymentSignatureHeader,
} from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { voucherTypes } from "@x402/evm";
import { type Hex, parseAbi } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAddress } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { awaitValue } from "../support/eventually.ts";
import { type Address, sendUsdc, settlementClient, usdcBalance } from "../support/x402.ts";
import { type BatchPayer, batchPayer, batchPayerOfKey, hundredCalls } from "../support/x402-batch.ts";
import { startBatchMesh } from "../support/x402-batch-mesh.ts";

const shared = inject("mesh");
const devnet = readDevnetFile(shared.devnetFile);
const chain = settlementClient(devnet);
const ESCROW = devnet.chains.settlement?.contracts.batchSettlement as Address;
const DEPOSIT = 1_000_000n; // the default X402_BATCH_MIN_DEPOSIT: 1 USDC
// This suite's own receiver: its balance is what this suite's channels were settled, nothing else.
const PAY_TO = privateKeyToAddress(generatePrivateKey());
/** The settlement key of this suite's mesh (batchMeshEnv's spare): every transaction Tollgate sends. */
const SETTLEMENT_KEY = devnet.accounts.find((a) => a.role === "spare5")?.address as Address;

const escrow = parseAbi([
  "function channels(bytes32) view returns (uint128 balance, uint128 totalClaimed)",
  "function refundNonce(bytes32) view returns (uint256)",
  "event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed)",
  "event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount)",
]);

/** 24 calls at four prices (0.046 USDC in all): a tenth of hundredCalls, each kind of call. */
const CALLS = hundredCalls(devnet).filter((_, i) => i % 10 < 2 || i >= 96);
const SUM = CALLS.reduce((s, c) => s + priceAtomic(c.price), 0n);
const BLOCK_NUMBER = CALLS[0]?.path ?? "";

let mesh: Mesh;
let url: (path: string) => string;

beforeAll(async () => {
  mesh = await startBatchMesh({
    stateDir: shared.stateDir,
    namespace: `xrefund${process.pid}`,
    payTo: PAY_TO,
    upstreams: {
      ethereum: devnet.chains.ethereum?.rpcUrl ?? "",
      sepolia: devnet.chains.sepolia?.rpcUrl ?? "",
    },
    // Only the refunds payers ask for.
    worker: { X402_BATCH_IDLE_REFUND_SECONDS: "0" },
  });
  url = (path) => `${mesh.gatewayUrl}${path}`;
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
});

async function pay(payer: BatchPayer, calls: typeof CALLS) {
  for (const c of calls) {
    const res = await payer.fetch(url(c.path), {
      method: c.body === undefined ? "GET" : "POST",
      ...(c.body === undefined
        ? {}
        : { body: JSON.stringify(c.body), headers: { "content-type": "application/json" } }),
    });
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBe(200);
  }
}

/** The payer's first payment: its channel's config and id, and a paid offer (block-number's). */
function channelOf(payer: BatchPayer) {
  const first = decodePaymentSignatureHeader(payer.signatures[0] ?? "");
  const inner = first.payload as { channelConfig: Record<string, unknown>; voucher: { channelId: Hex } };
  return { first, config: inner.channelConfig, channelId: inner.voucher.channelId };
}

/** A voucher of `amount` on `channelId`, signed by `signer` (EIP-712, the scheme's domain). */
async function voucher(signer: PrivateKeyAccount, channelId: Hex, amount: bigint) {
  const signature = await signer.signTypedData({
    domain: {
      name: "x402 Batch Settlement",
      version: "1",
      chainId: await chain.getChainId(),
      verifyingContract: ESCROW,
    },
    types: voucherTypes,
    primaryType: "Voucher",
    message: { channelId, maxClaimableAmount: amount },
  });
  return { channelId, maxClaimableAmount: String(amount), signature };
}

/** A GET of block-number carrying this payment payload (the payer's first payment's offer). */
async function send(first: PaymentPayload, payload: Record<string, unknown>) {
  const header = encodePaymentSignatureHeader({ ...first, payload });
  const res = await fetch(url(BLOCK_NUMBER), { headers: { "payment-signature": header } });
  const body = (await res.json().catch(() => null)) as { data?: unknown; error?: { message: string } } | null;
  const required = res.headers.get("payment-required");
  return { res, body, error: required ? decodePaymentRequiredHeader(required).error : undefined };
}

const onchain = (channelId: Hex) =>
  chain.readContract({ address: ESCROW, abi: escrow, functionName: "channels", args: [channelId] });
const refundNonce = (channelId: Hex) =>
  chain.readContract({ address: ESCROW, abi: escrow, functionName: "refundNonce", args: [channelId] });
const refundsOf = async (channelId: Hex, fromBlock: bigint) =>
  (await chain.getLogs({ address: ESCROW, event: escrow[3], args: { channelId }, fromBlock })).map(
    (l) => [l.transactionHash, l.args.amount] as const,
  );

/** The settlement worker's refund gas and refund transactions for the payers' requests, as exported. */
async function refundMetrics() {
  const text = await (
    await fetch(`http://127.0.0.1:${mesh.ports["settlement-worker"].metrics}/metrics`)
  ).text();
  const value = (name: string) =>
    Number(new RegExp(`^${name}\\{reason="requested"\\} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN);
  return {
    gas: value("settlement_x402_batch_refund_gas_total"),
    transactions: value("settlement_x402_batch_refunds_total"),
  };
}

const until = <T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, ms = 60_000) =>
  awaitValue(what, read, done, ms, 250);

/** Every transaction the settlement key sent since `fromBlock`, with its receipt's status. */
async function sentSince(fromBlock: bigint) {
  const to = await chain.getBlockNumber({ cacheTime: 0 });
  const out: { hash: Hex; status: string }[] = [];
  for (let n = fromBlock; n <= to; n++) {
    const block = await chain.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) {
      if (tx.from.toLowerCase() !== SETTLEMENT_KEY.toLowerCase()) continue;
      const receipt = await chain.getTransactionReceipt({ hash: tx.hash });
      out.push({ hash: tx.hash, status: receipt.status });
    }
  }
  return out;
}

describe("x402-batch cooperative refunds (official client's refund(), real chain, the worker sends them)", () => {
  it("refund() returns exactly the unspent deposit within a claim cycle; every call served is claimed and settled; the ledger has the refund once", async () => {
    const payer = batchPayer(devnet, "payer6");
    const before = await usdcBalance(chain, devnet, payer.address);
    const startBlock = await chain.getBlockNumber({ cacheTime: 0 });
    await pay(payer, CALLS);
    const { channelId } = channelOf(payer);
    expect(await usdcBalance(chain, devnet, payer.address)).toBe(before - DEPOSIT);

    // Asked twice at once (two tasks of the agent): one refund, the other refused.
    const started = performance.now();
    const both = await Promise.allSettled([
      payer.scheme.refund(url(BLOCK_NUMBER)),
      payer.scheme.refund(url(BLOCK_NUMBER)),
    ]);
    const tookMs = performance.now() - started;
    const answered = both.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    expect(answered, JSON.stringify(both)).toHaveLength(1);
    const refund = answered[0] as (typeof answered)[number];
    expect(refund).toMatchObject({
      success: true,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      amount: String(DEPOSIT - SUM),
      extra: {
        channelState: {
          balance: String(SUM),
          totalClaimed: String(SUM),
          chargedCumulativeAmount: String(SUM),
        },
      },
    });
    // Answered with its mined transaction: sent on the worker's next pass, not a day later.
    expect(tookMs).toBeLessThan(10_000);
    // The payer has back all it did not spend; the escrow keeps exactly the calls, all claimed.
    expect(await usdcBalance(chain, devnet, payer.address)).toBe(before - SUM);
    expect(await onchain(channelId)).toEqual([SUM, SUM]);
    expect(await refundsOf(channelId, startBlock)).toEqual([[refund.transaction, DEPOSIT - SUM]]);
    // The claimed calls reach the receiver (the worker's settle after the refund's claim).
    await until(
      "payTo's balance",
      () => usdcBalance(chain, devnet, PAY_TO),
      (b) => b === SUM,
    );

    const ledger = createLedgerClient(
      `127.0.0.1:${mesh.ports["settlement-worker"].main}`,
      readFileSync(mesh.operatorTokenFile, "utf8").trim(),
    );
    try {
      const rows = await until(
        "the ledger's refund",
        async () => (await ledger.list({ channel: channelId.toLowerCase(), limit: 1000 })).settlements ?? [],
        (r) => r.some((s) => s.outcome === "refunded"),
      );
      const refunded = rows.filter((s) => s.outcome === "refunded");
      expect(refunded).toHaveLength(1);
      expect(refunded[0]).toMatchObject({
        amount: String(DEPOSIT - SUM),
        transaction: refund.transaction.toLowerCase(),
        scheme: "x402-batch",
      });
      expect(refunded[0]?.payer.toLowerCase()).toBe(payer.address.toLowerCase());
      // The ledger row names the request that asked for it (the gateway's request id).
      expect(refunded[0]?.requestId).toMatch(/.+/);
      const totals = (await ledger.list({ channel: channelId.toLowerCase(), limit: 1000 })).totals ?? [];
      expect(Object.fromEntries(totals.map((t) => [t.outcome, t.amount]))).toMatchObject({
        accrued: String(SUM),
        claimed: String(SUM),
        refunded: String(DEPOSIT - SUM),
      });
    } finally {
      ledger.close();
    }
  }, 240_000);

  it("a refund cannot be asked by another wallet, replayed, or used for free calls or our gas: none is served, none sends a transaction", async () => {
    const payer = batchPayer(devnet, "payer5");
    const stranger = batchPayer(devnet, "payer4").account;
    const startBlock = await chain.getBlockNumber({ cacheTime: 0 });
    const calls = CALLS.slice(0, 3); // 3 × 0.001 USDC
    await pay(payer, calls);
    const charged = calls.reduce((s, c) => s + priceAtomic(c.price), 0n);
    const { first, config, channelId } = channelOf(payer);
    const price = priceAtomic(calls[0]?.price ?? "0");

    // Another wallet asks for this payer's refund: its voucher is not the payer's.
    const foreign = await send(first, {
      type: "refund",
      channelConfig: config,
      voucher: await voucher(stranger, channelId, charged),
    });
    expect(foreign.res.status).toBe(402);
    expect(foreign.body?.error?.message).toMatch(/signature/);
    // An older voucher of the payer's (below what was charged): the corrective 402, nothing sent.
    const stale = await send(first, {
      type: "refund",
      channelConfig: config,
      voucher: await voucher(payer.account, channelId, charged - price),
    });
    expect(stale.res.status).toBe(402);
    expect(stale.error).toBe("invalid_batch_settlement_evm_cumulative_amount_mismatch");
    expect(await refundNonce(channelId)).toBe(0n);

    // The payer's own request, recorded as sent, then replayed (the same header) after it landed.
    const headers: string[] = [];
    const recording = async (input: string | URL | Request, init?: RequestInit) => {
      const request = new Request(input, init);
      const signature = request.headers.get("payment-signature");
      if (signature) headers.push(signature);
      return fetch(request);
    };
    const refund = await payer.scheme.refund(url(BLOCK_NUMBER), { fetch: recording });
    expect(refund).toMatchObject({ success: true, amount: String(DEPOSIT - charged) });
    expect(await refundNonce(channelId)).toBe(1n);
    const replay = await fetch(url(BLOCK_NUMBER), { headers: { "payment-signature": headers.at(-1) ?? "" } });
    const replayed = (await replay.json()) as { data: unknown };
    expect(replay.status).toBe(402);
    expect(replayed.data).toBeNull();
    // A voucher after the refund, with no deposit: what is left is what was charged, so it is
    // refused and nothing is served.
    const free = await send(first, {
      type: "voucher",
      channelConfig: config,
      voucher: await voucher(payer.account, channelId, charged + price),
    });
    expect(free.res.status).toBe(402);
    expect(free.body?.data ?? null).toBeNull();
    // A partial refund of a channel with nothing unspent: refused before anything is sent.
    const empty = await send(first, {
      type: "refund",
      channelConfig: config,
      voucher: await voucher(payer.account, channelId, charged),
      amount: "1000",
    });
    expect(empty.res.status).toBe(402);

    // One refund on chain; the payer got back all it did not spend; the escrow holds the calls.
    expect(await refundsOf(channelId, startBlock)).toEqual([[refund.transaction, DEPOSIT - charged]]);
    expect(await refundNonce(channelId)).toBe(1n);
    expect(await onchain(channelId)).toEqual([charged, charged]);
    // Every transaction Tollgate sent meanwhile (the deposit, claims, the refund, settles) succeeded:
    // no gas spent on one that reverted.
    const sent = await sentSince(startBlock + 1n);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.filter((t) => t.status !== "success")).toEqual([]);

    // The official client pays on: a new deposit into the same channel, served and charged.
    await pay(payer, calls.slice(0, 1));
    expect((await onchain(channelId))[0]).toBe(charged + DEPOSIT);
  }, 240_000);
  it("a hostile payer gets at most one refund transaction per deposit: any amounts, in turn or at once, on each of its channels", async () => {
    // Two channels of one payer of its own (two salts), one deposit and one paid call each.
    const key = generatePrivateKey();
    await sendUsdc(devnet, "payer8", privateKeyToAddress(key), 2n * DEPOSIT);
    const channels = [batchPayerOfKey(devnet, key), batchPayerOfKey(devnet, key, `0x${"71".repeat(32)}`)];
    const startBlock = await chain.getBlockNumber({ cacheTime: 0 });
    const counted = await refundMetrics();
    for (const payer of channels) await pay(payer, CALLS.slice(0, 1));
    const [first, second] = channels as [BatchPayer, BatchPayer];
    const ask = (payer: BatchPayer, amount?: bigint) =>
      payer.scheme.refund(url(BLOCK_NUMBER), amount === undefined ? undefined : { amount: String(amount) });
    const amounts = [100_000n, 200_000n, 300_000n, 400_000n];

    // Channel 1: four refunds of different amounts at once, then others in turn, then the rest.
    const atOnce = await Promise.allSettled(amounts.map((a) => ask(first, a)));
    const inTurn = [];
    for (const a of [150_000n, 250_000n, undefined]) inTurn.push(await ask(first, a).catch((e: Error) => e));
    // Channel 2: in turn first (the attack as reported, each amount new), then four at once.
    for (const a of amounts) inTurn.push(await ask(second, a).catch((e: Error) => e));
    const later = await Promise.allSettled(amounts.map((a) => ask(second, a + 1n)));

    // Every refund that went out, per channel, from the escrow's own Refunded logs.
    const perChannel = await Promise.all(channels.map((p) => refundsOf(channelOf(p).channelId, startBlock)));
    const gas = await Promise.all(
      perChannel.flat().map(async ([hash]) => (await chain.getTransactionReceipt({ hash })).gasUsed),
    );
    console.log(
      `refund transactions per deposit under a hostile payer: ${perChannel.map((r) => r.length).join(", ")} (${gas.join(" + ")} gas)`,
    );
    expect(perChannel.map((r) => r.length)).toEqual([1, 1]);
    // The worker counts them and their gas (ours) for the alert (TollgateBatchRefundGasHigh).
    const spent = gas.reduce((s, g) => s + Number(g), 0);
    await until(
      "the worker's refund gas counter",
      async () => JSON.stringify(await refundMetrics()),
      (m) => m === JSON.stringify({ gas: counted.gas + spent, transactions: counted.transactions + 2 }),
    );
    // Channel 2's first request was its refund; everything after it sent nothing.
    expect(perChannel[1]).toEqual([[expect.any(String), 100_000n]]);
    // The answers never claim a second refund: every success names the one transaction.
    const ok = [...atOnce, ...later].flatMap((r) => (r.status === "fulfilled" ? [r.value.transaction] : []));
    const okInTurn = inTurn.flatMap((r) => (r instanceof Error ? [] : [r.transaction]));
    const sent = new Set(perChannel.flat().map(([hash]) => hash.toLowerCase()));
    for (const t of [...ok, ...okInTurn]) expect(sent.has(t.toLowerCase())).toBe(true);
    // Refused ones say why (one refund per deposit, or the channel busy with it).
    const refused = inTurn.filter((r) => r instanceof Error).map((e) => (e as Error).message);
    expect(refused.length).toBeGreaterThanOrEqual(6);
    for (const m of refused) expect(m).toMatch(/refund_already_sent|channel_busy/);
    // The payer lost nothing: back exactly what the two refunds returned.
    const returned = perChannel.flat().reduce((s, [, a]) => s + (a ?? 0n), 0n);
    expect(await usdcBalance(chain, devnet, first.address)).toBe(returned);
  }, 240_000);

  it("a refund below the minimum (its gas) is refused, naming amount and minimum, nothing sent; the payer then gets all it did not spend", async () => {
    const key = generatePrivateKey();
    await sendUsdc(devnet, "payer8", privateKeyToAddress(key), DEPOSIT);
    const payer = batchPayerOfKey(devnet, key);
    const startBlock = await chain.getBlockNumber({ cacheTime: 0 });
    await pay(payer, CALLS.slice(0, 1));
    const charged = priceAtomic(CALLS[0]?.price ?? "0");
    const { channelId } = channelOf(payer);
    // The answer's body, as a client that is not the SDK reads it.
    const bodies: string[] = [];
    const reading = async (input: string | URL | Request, init?: RequestInit) => {
      const res = await fetch(new Request(input, init));
      if (new Request(input, init).headers.get("payment-signature")) bodies.push(await res.clone().text());
      return res;
    };
    // The official client gives up at once on the SDK's code, its channel state untouched.
    await expect(payer.scheme.refund(url(BLOCK_NUMBER), { amount: "1", fetch: reading })).rejects.toThrow(
      "invalid_batch_settlement_evm_refund_amount_invalid",
    );
    expect(bodies.at(-1)).toMatch(/refund amount 1 is below the minimum refund of 75000 atomic units/);
    expect(await refundNonce(channelId)).toBe(0n);
    // The documented way: everything unspent (or at least the minimum).
    const refund = await payer.scheme.refund(url(BLOCK_NUMBER));
    expect(refund).toMatchObject({ success: true, amount: String(DEPOSIT - charged) });
    expect(await refundsOf(channelId, startBlock)).toEqual([[refund.transaction, DEPOSIT - charged]]);
    expect(await usdcBalance(chain, devnet, payer.address)).toBe(DEPOSIT - charged);
  }, 240_000);
});
