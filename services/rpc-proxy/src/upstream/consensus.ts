// The consistent head and quorum reads (README, Consistent head; Quorum reads): `latest` pinned to
// the head a majority of the upstreams in rotation reached, and the k-of-n comparison of answers.
import { createHash } from "node:crypto";
import type { RpcCall, RpcOutcome } from "./jsonrpc.ts";

/**
 * Where a method takes its block (a tag or a number), for the methods rpc-proxy relays or calls.
 * eth_getLogs takes it in its filter (pinFilter).
 */
const BLOCK_PARAM = new Map<string, number>([
  ["eth_getBalance", 1],
  ["eth_getCode", 1],
  ["eth_getTransactionCount", 1],
  ["eth_getStorageAt", 2],
  ["eth_call", 1],
  ["eth_estimateGas", 1],
  ["eth_getBlockByNumber", 0],
  ["eth_feeHistory", 1],
]);

/**
 * The highest block at least half of `heads` reached (rounded up: 2 of 3, 2 of 4, 1 of 2, 1 of 1).
 * Sorts `heads` in place; undefined when empty.
 */
export function majorityHead(heads: bigint[]): bigint | undefined {
  if (heads.length === 0) return undefined;
  heads.sort((a, b) => (a > b ? -1 : a < b ? 1 : 0));
  return heads[Math.ceil(heads.length / 2) - 1];
}

/**
 * `calls` with every `latest` block parameter (and eth_call's omitted block, which nodes read as
 * latest; an eth_getLogs filter's omitted fromBlock/toBlock likewise) replaced by `head`, a hex
 * block number. The same array when nothing was pinned: no copy for calls that take no block.
 */
export function pinLatest(calls: readonly RpcCall[], head: string): readonly RpcCall[] {
  let out: RpcCall[] | undefined;
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!;
    const pinned = call.method === "eth_getLogs" ? pinFilter(call, head) : pinParam(call, head);
    if (pinned !== call) {
      out ??= calls.slice();
      out[i] = pinned;
    }
  }
  return out ?? calls;
}

function pinParam(call: RpcCall, head: string): RpcCall {
  const at = BLOCK_PARAM.get(call.method);
  if (at === undefined) return call;
  const tag = call.params[at];
  const omitted = tag === undefined && call.method === "eth_call" && call.params.length === at;
  if (tag !== "latest" && !omitted) return call;
  const params = call.params.slice();
  params[at] = head;
  return { method: call.method, params };
}

function pinFilter(call: RpcCall, head: string): RpcCall {
  const filter = call.params[0] as
    | { fromBlock?: unknown; toBlock?: unknown; blockHash?: unknown }
    | undefined;
  if (!filter || typeof filter !== "object" || filter.blockHash !== undefined) return call;
  const from = filter.fromBlock ?? "latest";
  const to = filter.toBlock ?? "latest";
  if (from !== "latest" && to !== "latest") return call;
  return {
    method: call.method,
    params: [
      { ...filter, fromBlock: from === "latest" ? head : from, toBlock: to === "latest" ? head : to },
      ...call.params.slice(1),
    ],
  };
}

/** eth_blockNumber answers the consistent head (`head`, hex) it was pinned to, whatever node answered. */
export function answerHead(calls: readonly RpcCall[], outcomes: RpcOutcome[], head: string): void {
  for (let i = 0; i < calls.length; i++) {
    if (calls[i]!.method === "eth_blockNumber" && outcomes[i]?.ok) outcomes[i] = { ok: true, result: head };
  }
}

/**
 * What two answers must share to be the same answer: every result as it came; for a JSON-RPC
 * error its code and data (a revert's payload), not its message, whose wording differs by client.
 */
export function answerKey(outcomes: readonly RpcOutcome[]): string {
  return JSON.stringify(
    outcomes.map((o) => (o.ok ? { result: o.result } : { error: o.error.code, data: o.error.data })),
  );
}

/** A short digest of an answer for log lines: enough to tell answers apart, never the answer. */
export function answerHash(key: string): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 16);
}
