import { QUANTITY } from "@tollgate/catalog";
import { grpc, ServiceError } from "@tollgate/platform";
import { malformedAnswer } from "../errors.ts";
import { type Operation, rpc, rpcBatch } from "./shared.ts";

interface RpcBlock {
  gasLimit: string;
  gasUsed: string;
  hash: string | null;
  number: string | null;
  parentHash: string;
  timestamp: string;
  transactions: unknown[];
}

export const blockNumber: Operation = async (_params, ctx) => {
  const result = await rpc<string>(ctx, "eth_blockNumber", []);
  return { block_number: result, network: ctx.network };
};

/**
 * blockNumber's and chainId's results are a quantity and the network: when this holds, so does
 * the catalog's schema (server.ts then skips the zod parse; when not, the schema decides).
 */
export function isQuantityResult(data: unknown, field: "block_number" | "chain_id"): boolean {
  const value = (data as Record<string, unknown>)[field];
  return typeof value === "string" && QUANTITY.test(value);
}

export const chainId: Operation = async (_params, ctx) => {
  const result = await rpc<string>(ctx, "eth_chainId", []);
  return { chain_id: result, network: ctx.network };
};

/** Header fields plus transaction hashes (eth_getBlockByNumber with full=false). */
export const block: Operation = async (params, ctx) => {
  const { number } = params as { number: string };
  const result = await rpc<RpcBlock | null>(ctx, "eth_getBlockByNumber", [number, false]);
  if (result === null) {
    throw new ServiceError(grpc.status.NOT_FOUND, "block_not_found", `block ${number} not found`);
  }
  if (typeof result !== "object" || !Array.isArray(result.transactions)) throw malformedAnswer("block");
  return {
    gas_limit: result.gasLimit,
    gas_used: result.gasUsed,
    hash: result.hash ?? null,
    number: result.number ?? null,
    parent_hash: result.parentHash,
    timestamp: result.timestamp,
    transactions: result.transactions.map((t) =>
      typeof t === "string" ? t : (t as { hash?: unknown } | null)?.hash,
    ),
  };
};

/** Chain id, head and gas price in one JSON-RPC batch. */
export const networkInfo: Operation = async (_params, ctx) => {
  const [chain, head, gasPrice] = await rpcBatch(ctx, [
    { method: "eth_chainId", params: [] },
    { method: "eth_blockNumber", params: [] },
    { method: "eth_gasPrice", params: [] },
  ]);
  return { chain_id: chain, block_number: head, gas_price: gasPrice, network: ctx.network };
};
