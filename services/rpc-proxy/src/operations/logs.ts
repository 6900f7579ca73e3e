import { grpc, ServiceError } from "@tollgate/platform";
import { type Address, getAddress, type Hex, pad } from "viem";
import { invalidParameter, malformedAnswer } from "../errors.ts";
import { type Operation, type OperationContext, rpcBatch, toQuantity } from "./shared.ts";

/** Transfer(address,address,uint256): shared by ERC-20 and ERC-721 (which indexes the third). */
const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

interface RpcLog {
  address: string;
  blockNumber: string | null;
  data: string;
  logIndex: string | null;
  topics: string[];
  transactionHash: string | null;
}

interface LogRange {
  fromBlock: string;
  toBlock: string;
}

/**
 * Bounds a log query. A missing to_block is latest; a missing from_block is to_block
 * minus the default range plus one (not below 0). Tags are estimated from the tracked
 * head (no extra round trip) for the range check only: the node gets the caller's
 * selectors unchanged.
 */
export function resolveRange(
  params: { from_block?: string; to_block?: string },
  ctx: OperationContext,
): LogRange {
  const { maxBlockRange, defaultBlockRange } = ctx.config.logs;
  const toBlock = params.to_block ?? "latest";
  const head = ctx.pool.head();
  const numberOf = (selector: string): bigint | undefined => {
    if (selector === "earliest") return 0n;
    if (selector.startsWith("0x")) return BigInt(selector);
    return head; // latest, pending, safe, finalized: about the head
  };
  const unknownHead = () =>
    new ServiceError(
      grpc.status.UNAVAILABLE,
      "upstream_unavailable",
      `no ${ctx.network} node has reported its head block yet; retry shortly`,
    );

  const to = numberOf(toBlock);
  let fromBlock = params.from_block;
  if (fromBlock === undefined) {
    if (to === undefined) throw unknownHead();
    const from = to - BigInt(defaultBlockRange) + 1n;
    fromBlock = toQuantity(from < 0n ? 0n : from);
  }
  const from = numberOf(fromBlock);
  if (from === undefined || to === undefined) throw unknownHead();

  const exact = (s: string) => s.startsWith("0x") || s === "earliest";
  if (from > to) {
    // With a tag the head is an estimate a poll old: only refuse what is certainly wrong.
    if (exact(fromBlock) && exact(toBlock))
      throw invalidParameter("from_block", "must not be after to_block");
    return { fromBlock, toBlock };
  }
  if (to - from + 1n > BigInt(maxBlockRange)) {
    throw new ServiceError(
      grpc.status.INVALID_ARGUMENT,
      "block_range_too_large",
      `the block range spans ${to - from + 1n} blocks; the maximum is ${maxBlockRange}`,
      { max_block_range: maxBlockRange },
    );
  }
  return { fromBlock, toBlock };
}

function checkLogs(result: unknown): RpcLog[] {
  if (!Array.isArray(result)) throw malformedAnswer("eth_getLogs result");
  // Pending or removed logs carry no block or hash; they are not part of the answer.
  return (result as RpcLog[]).filter(
    (l) => !!l?.blockNumber && !!l.transactionHash && Array.isArray(l.topics),
  );
}

export const events: Operation = async (params, ctx) => {
  const p = params as {
    contract?: Address;
    topic?: Hex;
    topic1?: Hex;
    topic2?: Hex;
    topic3?: Hex;
    from_block?: string;
    to_block?: string;
  };
  const range = resolveRange(p, ctx);
  const topics: (Hex | null)[] = [p.topic ?? null, p.topic1 ?? null, p.topic2 ?? null, p.topic3 ?? null];
  while (topics.length > 0 && topics[topics.length - 1] === null) topics.pop();
  const filter = {
    ...range,
    ...(p.contract ? { address: p.contract } : {}),
    ...(topics.length > 0 ? { topics } : {}),
  };
  const [result] = await rpcBatch(ctx, [{ method: "eth_getLogs", params: [filter] }]);
  const logs = checkLogs(result).map((l) => ({
    address: l.address,
    block_number: l.blockNumber,
    data: l.data,
    topics: l.topics,
    tx_hash: l.transactionHash,
  }));
  return { count: logs.length, logs };
};

/**
 * ERC-20 Transfer logs. With `address`, the wallet as sender and as recipient are two
 * filters sent in ONE batch, then merged, de-duplicated (self-transfers match both) and
 * ordered by block and log index. Only three-topic logs are ERC-20: ERC-721 Transfer
 * shares topic0 but indexes the token id as a fourth topic.
 */
export const erc20Transfers: Operation = async (params, ctx) => {
  const p = params as { contract?: Address; address?: Address; from_block?: string; to_block?: string };
  const range = resolveRange(p, ctx);
  const base = { ...range, ...(p.contract ? { address: p.contract } : {}) };
  const filters = p.address
    ? [
        { ...base, topics: [TRANSFER_TOPIC, pad(p.address)] },
        { ...base, topics: [TRANSFER_TOPIC, null, pad(p.address)] },
      ]
    : [{ ...base, topics: [TRANSFER_TOPIC] }];
  const results = await rpcBatch(
    ctx,
    filters.map((filter) => ({ method: "eth_getLogs", params: [filter] })),
  );
  const seen = new Map<string, { block: bigint; index: bigint; log: RpcLog }>();
  for (const result of results) {
    for (const log of checkLogs(result)) {
      if (log.topics.length !== 3 || !/^0x[0-9a-fA-F]{64}$/.test(log.data)) continue;
      const key = `${log.transactionHash}:${log.logIndex}`;
      if (!seen.has(key))
        seen.set(key, { block: BigInt(log.blockNumber!), index: BigInt(log.logIndex ?? 0), log });
    }
  }
  const ordered = [...seen.values()].sort((a, b) =>
    a.block === b.block ? (a.index < b.index ? -1 : 1) : a.block < b.block ? -1 : 1,
  );
  const transfers = ordered.map(({ log }) => ({
    block_number: log.blockNumber!,
    from: getAddress(`0x${log.topics[1]!.slice(26)}`),
    to: getAddress(`0x${log.topics[2]!.slice(26)}`),
    token: getAddress(log.address),
    tx_hash: log.transactionHash!,
    value: BigInt(log.data).toString(),
  }));
  return { count: transfers.length, transfers };
};
