import { grpc, ServiceError } from "@tollgate/platform";
import { type Address, type Hex, pad } from "viem";
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
  /** A to_block past the head is asked as `latest`; logs after this block are left out. */
  last?: bigint;
}

/**
 * Bounds a log query. A missing to_block is latest; a missing from_block is the last
 * block covered minus the default range plus one (not below 0). Tags are read against
 * the head the head tracker last saw (no extra round trip): latest, pending, safe and
 * finalized as that head, earliest as 0. The node gets the caller's selectors, except a
 * to_block past the head: the query then ends at the head (`latest`) and the answer
 * covers the blocks that exist, never more than asked.
 */
export function resolveRange(
  params: { from_block?: string; to_block?: string },
  ctx: OperationContext,
): LogRange {
  const { maxBlockRange, defaultBlockRange } = ctx.config.logs;
  const head = ctx.pool.head();
  const numberOf = (selector: string): bigint | undefined => {
    if (selector === "earliest") return 0n;
    if (selector.startsWith("0x")) return BigInt(selector);
    return head;
  };
  const unknownHead = () =>
    new ServiceError(
      grpc.status.UNAVAILABLE,
      "upstream_unavailable",
      `no ${ctx.network} node has reported its head block yet; retry shortly`,
    );
  const toSelector = params.to_block ?? "latest";
  const to = numberOf(toSelector);
  if (to === undefined) throw unknownHead();
  // A numbered to_block past the head: the last block there is to read is the head.
  const pastHead = head !== undefined && to > head;
  const last = pastHead ? head : to;
  let fromSelector = params.from_block;
  if (fromSelector === undefined) {
    const from = last - BigInt(defaultBlockRange) + 1n;
    fromSelector = toQuantity(from < 0n ? 0n : from);
  }
  const from = numberOf(fromSelector);
  if (from === undefined) throw unknownHead();

  // A refusal is free: its text names the selectors as given and never what a tag or the head
  // resolved to, which would be a free read of block-number.
  if (from > to) {
    throw invalidParameter(
      "from_block",
      `must not be after to_block (${fromSelector}, to_block ${toSelector})`,
    );
  }
  if (head !== undefined && from > head) throw invalidParameter("from_block", "is after the chain head");
  if (last - from + 1n > BigInt(maxBlockRange)) {
    throw new ServiceError(
      grpc.status.INVALID_ARGUMENT,
      "block_range_too_large",
      `the block range spans more blocks than allowed; the maximum is ${maxBlockRange}`,
      { max_block_range: maxBlockRange },
    );
  }
  return pastHead
    ? { fromBlock: fromSelector, toBlock: "latest", last: to }
    : { fromBlock: fromSelector, toBlock: toSelector };
}

function checkLogs(result: unknown, range: LogRange): RpcLog[] {
  if (!Array.isArray(result)) throw malformedAnswer("eth_getLogs result");
  // Pending or removed logs carry no block or hash; they are not part of the answer.
  return (result as RpcLog[]).filter((l) => {
    if (!l?.blockNumber || !l.transactionHash || !Array.isArray(l.topics)) return false;
    if (!/^0x[0-9a-fA-F]{1,16}$/.test(l.blockNumber)) throw malformedAnswer("log block number");
    return range.last === undefined || BigInt(l.blockNumber) <= range.last;
  });
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
    fromBlock: range.fromBlock,
    toBlock: range.toBlock,
    ...(p.contract ? { address: p.contract } : {}),
    ...(topics.length > 0 ? { topics } : {}),
  };
  const [result] = await rpcBatch(ctx, [{ method: "eth_getLogs", params: [filter] }]);
  const logs = checkLogs(result, range).map((l) => ({
    // Nodes differ in casing; the API answers lower-case.
    address: l.address.toLowerCase(),
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
  const base = {
    fromBlock: range.fromBlock,
    toBlock: range.toBlock,
    ...(p.contract ? { address: p.contract } : {}),
  };
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
    for (const log of checkLogs(result, range)) {
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
    from: `0x${log.topics[1]!.slice(26).toLowerCase()}`,
    to: `0x${log.topics[2]!.slice(26).toLowerCase()}`,
    token: log.address.toLowerCase(),
    tx_hash: log.transactionHash!,
    value: BigInt(log.data).toString(),
  }));
  return { count: transfers.length, transfers };
};
