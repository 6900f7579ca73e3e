// The batch settlement contract, read for the claimer: confirmed channel state (one multicall for
// every channel that matters, refund nonces included), what the receiver has claimed but not settled, and the contract's
// logs in our transactions' receipts (what became settlement events) or since a block (what an
// open intent may have left out), and what a transaction of ours cost in gas.
import { BATCH_SETTLEMENT_ADDRESS } from "@x402/evm";
import { type Address, createPublicClient, type Hex, http, type Log, parseAbi, parseEventLogs } from "viem";
import type { BatchLog, OnChainChannel } from "../core/x402-batch-claims.ts";

export const ESCROW: Address = BATCH_SETTLEMENT_ADDRESS;
/** Multicall3, at its canonical address on every chain the scheme runs on (the SDK needs it too). */
const MULTICALL3: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";

const abi = parseAbi([
  "function channels(bytes32) view returns (uint128 balance, uint128 totalClaimed)",
  "function pendingWithdrawals(bytes32) view returns (uint128 amount, uint40 initiatedAt)",
  "function refundNonce(bytes32) view returns (uint256)",
  "function receivers(address, address) view returns (uint128 totalClaimed, uint128 totalSettled)",
  "event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed)",
  "event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount)",
  "event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount)",
]);

const events = {
  Claimed: abi[4],
  Settled: abi[5],
  Refunded: abi[6],
} as const;

export interface BatchChain {
  channels(ids: readonly string[]): Promise<Map<string, OnChainChannel>>;
  unsettled(): Promise<bigint>;
  logs(transaction: string): Promise<BatchLog[]>;
  blockNumber(): Promise<bigint>;
  logsSince(fromBlock: bigint, channelIds: readonly string[]): Promise<Map<string, BatchLog[]>>;
  /** What a mined transaction of ours cost: its gas and its fee (gas × effective price, wei). */
  spent(transaction: string): Promise<{ gas: bigint; feeWei: bigint }>;
}

export function createBatchChain(rpcUrl: string, receiver: Address, token: Address): BatchChain {
  const client = createPublicClient({ transport: http(rpcUrl, { timeout: 10_000, retryCount: 2 }) });
  return {
    async channels(ids) {
      const calls = ids.flatMap((id) => [
        { address: ESCROW, abi, functionName: "channels", args: [id as Hex] } as const,
        { address: ESCROW, abi, functionName: "pendingWithdrawals", args: [id as Hex] } as const,
        { address: ESCROW, abi, functionName: "refundNonce", args: [id as Hex] } as const,
      ]);
      // Confirmed state only: the latest mined block, never "pending".
      const results = await client.multicall({
        contracts: calls,
        allowFailure: false,
        multicallAddress: MULTICALL3,
        blockTag: "latest",
      });
      const out = new Map<string, OnChainChannel>();
      ids.forEach((id, i) => {
        const [balance, totalClaimed] = results[3 * i] as readonly [bigint, bigint];
        const [, initiatedAt] = results[3 * i + 1] as readonly [bigint, number];
        const refundNonce = results[3 * i + 2] as bigint;
        out.set(id.toLowerCase(), {
          balance,
          totalClaimed,
          withdrawing: Number(initiatedAt) !== 0,
          refundNonce,
        });
      });
      return out;
    },
    async unsettled() {
      const [claimed, settled] = await client.readContract({
        address: ESCROW,
        abi,
        functionName: "receivers",
        args: [receiver, token],
      });
      return claimed - settled;
    },
    async logs(transaction) {
      const receipt = await client.getTransactionReceipt({ hash: transaction as Hex });
      const escrow = ESCROW.toLowerCase();
      return toBatchLogs(receipt.logs.filter((l) => l.address.toLowerCase() === escrow)).map(([, l]) => l);
    },
    blockNumber: () => client.getBlockNumber({ cacheTime: 0 }),
    async spent(transaction) {
      const receipt = await client.getTransactionReceipt({ hash: transaction as Hex });
      return { gas: receipt.gasUsed, feeWei: receipt.gasUsed * receipt.effectiveGasPrice };
    },
    async logsSince(fromBlock, channelIds) {
      const ids = channelIds as Hex[];
      const [claimed, refunded, settled] = await Promise.all([
        ids.length
          ? client.getLogs({ address: ESCROW, event: events.Claimed, args: { channelId: ids }, fromBlock })
          : [],
        ids.length
          ? client.getLogs({ address: ESCROW, event: events.Refunded, args: { channelId: ids }, fromBlock })
          : [],
        client.getLogs({ address: ESCROW, event: events.Settled, args: { receiver, token }, fromBlock }),
      ]);
      const out = new Map<string, BatchLog[]>();
      for (const [transaction, log] of toBatchLogs([...claimed, ...refunded, ...settled])) {
        const list = out.get(transaction) ?? [];
        list.push(log);
        out.set(transaction, list);
      }
      for (const list of out.values()) list.sort((a, b) => a.logIndex - b.logIndex);
      return out;
    },
  };

  /** The money-moving logs among these escrow logs, with their transaction. */
  function toBatchLogs(logs: readonly Log[]): [string, BatchLog][] {
    const out: [string, BatchLog][] = [];
    for (const log of parseEventLogs({ abi, logs: logs as Log[] })) {
      const logIndex = log.logIndex ?? 0;
      const tx = log.transactionHash ?? "";
      if (log.eventName === "Claimed")
        out.push([
          tx,
          {
            kind: "claimed",
            logIndex,
            channelId: log.args.channelId,
            amount: log.args.claimAmount,
            totalClaimed: log.args.newTotalClaimed,
          },
        ]);
      else if (log.eventName === "Settled" && log.args.receiver.toLowerCase() === receiver.toLowerCase())
        out.push([tx, { kind: "settled", logIndex, receiver: log.args.receiver, amount: log.args.amount }]);
      else if (log.eventName === "Refunded")
        out.push([
          tx,
          { kind: "refunded", logIndex, channelId: log.args.channelId, amount: log.args.amount },
        ]);
    }
    return out;
  }
}
