// The settlement worker killed (SIGKILL) between a claim it sent and that claim's settlement event:
// the claim is mined while the worker is dead, and the worker started again journals the event from
// the chain. A mesh of its own (one worker) on the shared devnet's settlement chain, the unmodified
// official batch-settlement client, the ledger in PostgreSQL fed through NATS JetStream.
import { readFileSync } from "node:fs";
import { priceAtomic } from "@tollgate/catalog";
import { createLedgerClient } from "@tollgate/cli/clients/settlement-admin";
import { readDevnetFile } from "@tollgate/devnet";
import type { Mesh } from "@tollgate/local";
import { decodePaymentSignatureHeader } from "@x402/core/http";
import { type Hex, parseAbi } from "viem";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { awaitValue, eventually } from "../support/eventually.ts";
import { nodeRpc } from "../support/node-rpc.ts";
import { type Address, settlementClient, usdcBalance } from "../support/x402.ts";
import { batchPayer } from "../support/x402-batch.ts";
import { batchMeshEnv, ESCROW_ABI, startBatchMesh } from "../support/x402-batch-mesh.ts";

const shared = inject("mesh");
const devnet = readDevnetFile(shared.devnetFile);
const chain = settlementClient(devnet);
const RPC = devnet.chains.settlement?.rpcUrl ?? "";
const ESCROW = devnet.chains.settlement?.contracts.batchSettlement as Address;
const PATH = "/api/chain/block-number";
const PRICE = priceAtomic("0.001");
const DEPOSIT = 1_000_000n;
// This suite's own receiver: a channel of its own, and payTo's balance is only this suite's.
const PAY_TO = privateKeyToAddress(generatePrivateKey());

const settledEvent = parseAbi([
  "event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount)",
])[0];

const FACILITATOR = privateKeyToAddress(batchMeshEnv(PAY_TO).base.X402_FACILITATOR_PRIVATE_KEY as Hex);
let mesh: Mesh;

beforeAll(async () => {
  mesh = await startBatchMesh({
    stateDir: shared.stateDir,
    namespace: `xbcrash${process.pid}`,
    payTo: PAY_TO,
    upstreams: {
      ethereum: devnet.chains.ethereum?.rpcUrl ?? "",
      sepolia: devnet.chains.sepolia?.rpcUrl ?? "",
    },
  });
}, 180_000);

afterAll(async () => {
  await anvil("evm_setAutomine", [true]).catch(() => undefined);
  await mesh?.stop();
});

const anvil = (method: string, params: unknown[] = []) => nodeRpc(RPC, method, params);

const until = <T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, ms = 90_000) =>
  awaitValue(what, read, done, ms, 250);

describe("x402-batch settlement events survive a worker crash (SIGKILL between a mined claim and its event)", () => {
  it("the claim mined while the worker was dead is journaled after the restart: one ledger event per claim, settle and refund; claimed == served", async () => {
    const payer = batchPayer(devnet, "payer4");
    const call = async () => {
      const res = await payer.fetch(`${mesh.gatewayUrl}${PATH}`);
      expect(res.status, await res.text()).toBe(200);
    };
    const startBlock = await chain.getBlockNumber({ cacheTime: 0 });
    await call(); // the deposit and the first voucher
    const channelId = (
      decodePaymentSignatureHeader(payer.signatures[0] ?? "").payload as { voucher: { channelId: Hex } }
    ).voucher.channelId;
    let served = PRICE;
    // The worker claims and settles the first voucher.
    await until(
      "payTo's balance",
      () => usdcBalance(chain, devnet, PAY_TO),
      (b) => b === served,
    );

    // Blocks are no longer mined: the worker's next claim waits in the mempool.
    await anvil("evm_setAutomine", [false]);
    try {
      for (let i = 0; i < 5; i++) {
        await call();
        served += PRICE;
      }
      const nonce = (tag: string) =>
        chain.getTransactionCount({ address: FACILITATOR, blockTag: tag as "latest" });
      await until(
        "the worker's claim in the mempool",
        async () => (await nonce("pending")) - (await nonce("latest")),
        (pending) => pending > 0,
        30_000,
      );
      const worker = mesh.services["settlement-worker"].child;
      worker.kill("SIGKILL");
      await eventually(() => worker.signalCode !== null || worker.exitCode !== null, true, 10_000, 10);
      await anvil("evm_mine");
    } finally {
      await anvil("evm_setAutomine", [true]);
    }
    // Mined with nobody left to journal it: on chain, everything served is claimed.
    await until(
      "the channel's claimed total",
      async () =>
        (
          await chain.readContract({
            address: ESCROW,
            abi: ESCROW_ABI,
            functionName: "channels",
            args: [channelId],
          })
        )[1],
      (c) => c === served,
      30_000,
    );

    await mesh.restart("settlement-worker");
    const ledger = createLedgerClient(
      `127.0.0.1:${mesh.ports["settlement-worker"].main}`,
      readFileSync(mesh.operatorTokenFile, "utf8").trim(),
    );
    try {
      const entries = await until(
        "the ledger's channel entries",
        async () => (await ledger.list({ channel: channelId.toLowerCase(), limit: 1000 })).settlements ?? [],
        (list) => list.some((e) => e.outcome === "refunded"),
        120_000,
      );
      const claimLogs = await chain.getLogs({
        address: ESCROW,
        event: ESCROW_ABI[1],
        args: { channelId },
        fromBlock: startBlock,
      });
      const claimed = entries.filter((e) => e.outcome === "claimed");
      // One event per claim on chain (the one mined during the crash included), none twice.
      expect(claimed.map((e) => e.transaction).sort()).toEqual(
        claimLogs.map((l) => l.transactionHash.toLowerCase()).sort(),
      );
      expect(claimLogs.length).toBeGreaterThanOrEqual(2);
      expect(claimed.reduce((s, e) => s + BigInt(e.amount ?? "0"), 0n)).toBe(served);
      const refunded = entries.filter((e) => e.outcome === "refunded");
      expect(refunded.map((e) => e.amount)).toEqual([String(DEPOSIT - served)]);
      // Every settle to this suite's receiver recorded once, and they add up to what it received.
      const settleLogs = await chain.getLogs({
        address: ESCROW,
        event: settledEvent,
        args: { receiver: PAY_TO },
        fromBlock: startBlock,
      });
      const settleTxs = new Set(settleLogs.map((l) => l.transactionHash.toLowerCase()));
      const settles = await until(
        "the ledger's settles to this receiver",
        async () =>
          (
            (await ledger.list({ payer: ESCROW, outcome: "channel_settled", limit: 1000 })).settlements ?? []
          ).filter((e) => settleTxs.has(e.transaction ?? "")),
        (list) => list.length >= settleLogs.length,
        60_000,
      );
      expect(settles.map((e) => e.transaction).sort()).toEqual([...settleTxs].sort());
      expect(settles.reduce((s, e) => s + BigInt(e.amount ?? "0"), 0n)).toBe(served);
      expect(await usdcBalance(chain, devnet, PAY_TO)).toBe(served);
    } finally {
      ledger.close();
    }
  }, 300_000);
});
