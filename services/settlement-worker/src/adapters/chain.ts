// Reads of the settlement chain for reconciliation (viem): the token's Transfer logs to the
// receiver in a block range, a block's time, and in which block a transaction landed.
import { type Address, createPublicClient, type Hex, http, type PublicClient, parseAbiItem } from "viem";
import type { Transfer } from "../core/reconcile.ts";

const TRANSFER = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");
/** Blocks per eth_getLogs call: under the limits of common node providers. */
const LOG_PAGE = 2_000n;

export interface SettlementChain {
  transfersTo(asset: Address, payTo: Address, from: bigint, to: bigint): Promise<Transfer[]>;
  blockTime(block: bigint): Promise<Date>;
  head(): Promise<bigint>;
  /** The block a transaction landed in; undefined when the chain has no such transaction. */
  blockOf(transaction: string): Promise<bigint | undefined>;
}

export function createSettlementChain(rpcUrl: string, timeoutMs = 10_000): SettlementChain {
  const client: PublicClient = createPublicClient({
    transport: http(rpcUrl, { timeout: timeoutMs, retryCount: 2 }),
  });
  return {
    async transfersTo(asset, payTo, from, to) {
      const out: Transfer[] = [];
      for (let start = from; start <= to; start += LOG_PAGE) {
        const end = start + LOG_PAGE - 1n < to ? start + LOG_PAGE - 1n : to;
        const logs = await client.getLogs({
          address: asset,
          event: TRANSFER,
          args: { to: payTo },
          fromBlock: start,
          toBlock: end,
        });
        for (const log of logs) {
          if (!log.transactionHash || log.blockNumber === null) continue;
          out.push({
            transaction: log.transactionHash,
            block: log.blockNumber,
            from: (log.args.from ?? "").toLowerCase(),
            amount: log.args.value ?? 0n,
          });
        }
      }
      return out;
    },
    async blockTime(block) {
      const b = await client.getBlock({ blockNumber: block });
      return new Date(Number(b.timestamp) * 1000);
    },
    // Never a cached head: the operator asks about blocks that may be seconds old.
    head: () => client.getBlockNumber({ cacheTime: 0 }),
    async blockOf(transaction) {
      if (!/^0x[0-9a-fA-F]{64}$/.test(transaction)) return undefined;
      try {
        return (await client.getTransactionReceipt({ hash: transaction as Hex })).blockNumber;
      } catch (err) {
        if ((err as Error).name === "TransactionReceiptNotFoundError") return undefined;
        throw err;
      }
    },
  };
}
