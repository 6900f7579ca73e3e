// x402-batch end to end, money included: the unmodified official batch-settlement client pays calls
// over one channel through a mesh of its own (every service its own process, TWO settlement worker
// replicas), on the shared devnet's settlement chain (our solc-compiled escrow and collector at the
// canonical addresses). The worker claims the accepted vouchers in batches, settles them to the
// receiver (an address of this suite's, so its balance is exactly what this suite was paid) and
// refunds idle channels. Killing the worker and payment-verifier mid-run loses no voucher.
import { readFileSync } from "node:fs";
import { priceAtomic } from "@tollgate/catalog";
import { createLedgerClient } from "@tollgate/cli/clients/settlement-admin";
import { readDevnetFile } from "@tollgate/devnet";
import type { Mesh } from "@tollgate/local";
import { decodePaymentResponseHeader, decodePaymentSignatureHeader } from "@x402/core/http";
import { type Hex, parseAbi } from "viem";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { awaitValue } from "../support/eventually.ts";
import { type Address, settlementClient, settlementNetwork, usdcBalance } from "../support/x402.ts";
import { type BatchPayer, batchPayer, hundredCalls } from "../support/x402-batch.ts";
import { ESCROW_ABI, startBatchMesh } from "../support/x402-batch-mesh.ts";

const shared = inject("mesh");
const devnet = readDevnetFile(shared.devnetFile);
const chain = settlementClient(devnet);
const NETWORK = settlementNetwork(devnet);
const USDC = devnet.demo.settlement.usdc.address;
const ESCROW = devnet.chains.settlement?.contracts.batchSettlement as Address;
const DEPOSIT = 1_000_000n; // the default X402_BATCH_MIN_DEPOSIT: 1 USDC
// This suite's own receiver: its balance is what this suite's channels were settled, nothing else.
const PAY_TO = privateKeyToAddress(generatePrivateKey());

const transferEvent = parseAbi([
  "event Transfer(address indexed from, address indexed to, uint256 value)",
])[0];

/** 100 calls at four prices (0.18 USDC in all). */
const CALLS = hundredCalls(devnet);
const SUM = CALLS.reduce((s, c) => s + priceAtomic(c.price), 0n);

let mesh: Mesh;
let replicaMetrics: string;

beforeAll(async () => {
  mesh = await startBatchMesh({
    stateDir: shared.stateDir,
    namespace: `xbatch${process.pid}`,
    payTo: PAY_TO,
    upstreams: {
      ethereum: devnet.chains.ethereum?.rpcUrl ?? "",
      sepolia: devnet.chains.sepolia?.rpcUrl ?? "",
    },
  });
  // A second worker replica: exactly one of the two claims at any time.
  const replica = await mesh.spawnReplica("settlement-worker");
  replicaMetrics = `http://127.0.0.1:${replica.ports.metrics}/metrics`;
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
});

async function call(payer: BatchPayer, c: (typeof CALLS)[number]) {
  const res = await payer.fetch(`${mesh.gatewayUrl}${c.path}`, {
    method: c.body === undefined ? "GET" : "POST",
    ...(c.body === undefined
      ? {}
      : { body: JSON.stringify(c.body), headers: { "content-type": "application/json" } }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the gateway's envelope, checked field by field below
  return { res, body: (await res.json()) as any };
}

async function channelOf(payer: BatchPayer): Promise<Hex> {
  const first = decodePaymentSignatureHeader(payer.signatures[0] ?? "");
  return (first.payload as { voucher: { channelId: Hex } }).voucher.channelId;
}

const onchain = async (channelId: Hex) =>
  chain.readContract({ address: ESCROW, abi: ESCROW_ABI, functionName: "channels", args: [channelId] });

const until = <T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, ms = 90_000) =>
  awaitValue(what, read, done, ms, 500);

/** Every claim of a channel on chain: [transaction, amount]. */
async function claimsOf(channelId: Hex, fromBlock: bigint) {
  const logs = await chain.getLogs({
    address: ESCROW,
    event: ESCROW_ABI[1],
    args: { channelId },
    fromBlock,
  });
  return logs.map((l) => [l.transactionHash, l.args.claimAmount ?? 0n] as const);
}

const metric = async (url: string, name: string) => {
  const text = await (await fetch(url)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return Number(line?.split(" ").at(-1));
};

describe("x402-batch claims, settles and refunds by the settlement worker (official client, real chain)", () => {
  it("100 calls over one channel: one payer transaction (the deposit); then payTo holds exactly the prices and the refund returns the rest", async () => {
    const payer = batchPayer(devnet, "payer7");
    const before = await usdcBalance(chain, devnet, payer.address);
    const startBlock = await chain.getBlockNumber({ cacheTime: 0 });
    for (const c of CALLS) {
      const { res, body } = await call(payer, c);
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(body.data).not.toBeNull();
      expect(body.meta).toMatchObject({ cost_usdc: c.price, payment_chain: NETWORK, payment_token: USDC });
      const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
      expect((receipt.extra as { chargedAmount?: string }).chargedAmount).toBe(String(priceAtomic(c.price)));
    }
    const endBlock = await chain.getBlockNumber({ cacheTime: 0 });
    // The payer's only transfer during the calls: the deposit.
    const fromPayer = await chain.getLogs({
      address: USDC,
      event: transferEvent,
      args: { from: payer.address },
      fromBlock: startBlock + 1n,
      toBlock: endBlock,
    });
    expect(fromPayer.map((l) => l.args.value)).toEqual([DEPOSIT]);
    const channelId = await channelOf(payer);

    // The worker claims everything served, settles it to payTo, and refunds the idle channel.
    await until(
      "payTo's balance",
      () => usdcBalance(chain, devnet, PAY_TO),
      (b) => b === SUM,
    );
    await until(
      "the payer's balance",
      () => usdcBalance(chain, devnet, payer.address),
      (b) => b === before - SUM,
    );
    expect(await onchain(channelId)).toEqual([SUM, SUM]);
    // Batched: far fewer claim transactions than calls, and every claimed amount adds up once.
    const claims = await claimsOf(channelId, startBlock);
    expect(claims.reduce((s, [, a]) => s + a, 0n)).toBe(SUM);
    expect(new Set(claims.map(([tx]) => tx)).size).toBeLessThan(CALLS.length / 4);

    // The ledger recorded every claim, the refund and the settle, each once.
    const ledger = createLedgerClient(
      `127.0.0.1:${mesh.ports["settlement-worker"].main}`,
      readFileSync(mesh.operatorTokenFile, "utf8").trim(),
    );
    try {
      const totals = await until(
        "the ledger's channel totals",
        async () => (await ledger.list({ channel: channelId.toLowerCase(), limit: 1000 })).totals ?? [],
        (t) => t.some((x) => x.outcome === "refunded"),
      );
      const by = Object.fromEntries(totals.map((t) => [t.outcome, t.amount]));
      expect(by).toMatchObject({
        claimed: String(SUM),
        refunded: String(DEPOSIT - SUM),
        accrued: String(SUM),
      });
      const settled = await ledger.list({ payer: ESCROW, outcome: "channel_settled", limit: 1000 });
      expect(settled.settlements?.every((s) => s.scheme === "x402-batch")).toBe(true);
      expect((settled.settlements ?? []).length).toBeGreaterThan(0);
    } finally {
      ledger.close();
    }
    // Two replicas, one lease holder.
    const held = [
      await metric(
        `http://127.0.0.1:${mesh.ports["settlement-worker"].metrics}/metrics`,
        "settlement_x402_batch_lease_held",
      ),
      await metric(replicaMetrics, "settlement_x402_batch_lease_held"),
    ];
    expect(held.sort()).toEqual([0, 1]);

    // The payer comes back after its idle channel was refunded: its client still holds the old
    // deposit, is answered with the channel's state, re-reads it on chain and deposits again.
    const price = priceAtomic(CALLS[0]?.price ?? "");
    const again = await call(payer, CALLS[0] as (typeof CALLS)[number]);
    expect(again.res.status, JSON.stringify(again.body)).toBe(200);
    const retried = decodePaymentSignatureHeader(payer.signatures.at(-1) ?? "").payload as {
      type: string;
      voucher: { channelId: string; maxClaimableAmount: string };
    };
    expect(retried).toMatchObject({
      type: "deposit",
      voucher: { channelId, maxClaimableAmount: String(SUM + price) },
    });
    // Claimed, settled to payTo and the rest refunded again: one price more, nothing lost.
    await until(
      "payTo's balance after the return",
      () => usdcBalance(chain, devnet, PAY_TO),
      (b) => b === SUM + price,
    );
    await until(
      "the payer's balance after the second refund",
      () => usdcBalance(chain, devnet, payer.address),
      (b) => b === before - SUM - price,
    );
    expect(await onchain(channelId)).toEqual([SUM + price, SUM + price]);
  }, 300_000);

  it("killing the worker and payment-verifier mid-run and restarting them loses no accepted voucher: claimed == served", async () => {
    const payer = batchPayer(devnet, "payer8");
    const startBlock = await chain.getBlockNumber({ cacheTime: 0 });
    const before = await usdcBalance(chain, devnet, payer.address);
    const payToBefore = await usdcBalance(chain, devnet, PAY_TO);
    let served = 0n;
    const run = async (calls: typeof CALLS) => {
      for (const c of calls) {
        const { res, body } = await call(payer, c).catch((err) => {
          throw new Error(`call ${served} ${c.path}: ${err.message}; ${err.cause ?? ""}`);
        });
        expect(res.status, JSON.stringify(body)).toBe(200);
        served += priceAtomic(c.price);
      }
    };
    await run(CALLS.slice(0, 50));
    // Both die without a chance to flush anything, then come back (same Redis, same keys).
    mesh.services["settlement-worker"].child.kill("SIGKILL");
    mesh.services["payment-verifier"].child.kill("SIGKILL");
    await Promise.all([mesh.restart("settlement-worker"), mesh.restart("payment-verifier")]);
    // The gateway reconnects to the new payment-verifier: offers come back.
    await until(
      "the gateway's offer",
      async () => (await fetch(`${mesh.gatewayUrl}/api/chain/block-number`)).headers.get("payment-required"),
      (offer) => offer !== null,
      60_000,
    );
    await run(CALLS.slice(50));
    expect(served).toBe(SUM);
    const channelId = await channelOf(payer);
    // Every voucher served is claimed (and the idle channel refunded): nothing was lost or doubled.
    const [, totalClaimed] = await until(
      "the channel's claimed total",
      () => onchain(channelId),
      ([b, c]) => c === served && b === served,
      120_000,
    );
    expect(totalClaimed).toBe(served);
    const claims = await claimsOf(channelId, startBlock);
    expect(claims.reduce((s, [, a]) => s + a, 0n)).toBe(served);
    await until(
      "payTo's balance",
      () => usdcBalance(chain, devnet, PAY_TO),
      (b) => b === payToBefore + served,
    );
    await until(
      "the payer's balance",
      () => usdcBalance(chain, devnet, payer.address),
      (b) => b === before - served,
    );
  }, 300_000);
});
