import { grpc, ServiceError } from "@tollgate/platform";
import { malformedAnswer } from "../errors.ts";
import { type Operation, rpc } from "./shared.ts";

/** The node's hex fields, as JSON-RPC names them (absent or null where the type has none). */
interface RpcTransaction {
  hash: string;
  blockHash: string | null;
  blockNumber: string | null;
  transactionIndex: string | null;
  from: string;
  to: string | null;
  value: string;
  nonce: string;
  gas: string;
  gasPrice?: string | null;
  maxFeePerGas?: string | null;
  maxPriorityFeePerGas?: string | null;
  input: string;
  type?: string;
  chainId?: string | null;
}

interface RpcReceipt {
  transactionHash: string;
  blockHash: string;
  blockNumber: string;
  transactionIndex: string;
  from: string;
  to: string | null;
  contractAddress: string | null;
  status?: string;
  gasUsed: string;
  cumulativeGasUsed: string;
  effectiveGasPrice?: string | null;
  type?: string;
  logs: {
    address: string;
    blockNumber: string;
    data: string;
    logIndex: string;
    topics: string[];
    transactionHash: string;
  }[];
}

const lowerOrNull = (a: string | null | undefined) => (a ? a.toLowerCase() : null);

function notFound(hash: string, what: string): ServiceError {
  return new ServiceError(grpc.status.NOT_FOUND, "transaction_not_found", `${what} ${hash} not found`);
}

export const balance: Operation = async (params, ctx) => {
  const { address, block } = params as { address: string; block?: string };
  const at = block ?? "latest";
  const result = await rpc<string>(ctx, "eth_getBalance", [address, at]);
  if (typeof result !== "string" || !/^0x[0-9a-fA-F]{1,64}$/.test(result)) {
    throw malformedAnswer("eth_getBalance result");
  }
  return { account: address, balance: BigInt(result).toString(), decimals: 18, symbol: "ETH", block: at };
};

export const transaction: Operation = async (params, ctx) => {
  const { hash } = params as { hash: string };
  const tx = await rpc<RpcTransaction | null>(ctx, "eth_getTransactionByHash", [hash]);
  if (tx === null) throw notFound(hash, "transaction");
  if (typeof tx !== "object" || typeof tx.hash !== "string" || typeof tx.from !== "string") {
    throw malformedAnswer("transaction");
  }
  return {
    hash: tx.hash,
    block_hash: tx.blockHash ?? null,
    block_number: tx.blockNumber ?? null,
    transaction_index: tx.transactionIndex ?? null,
    from: tx.from.toLowerCase(),
    to: lowerOrNull(tx.to),
    value: tx.value,
    nonce: tx.nonce,
    gas: tx.gas,
    gas_price: tx.gasPrice ?? null,
    max_fee_per_gas: tx.maxFeePerGas ?? null,
    max_priority_fee_per_gas: tx.maxPriorityFeePerGas ?? null,
    input: tx.input,
    type: tx.type ?? "0x0",
    chain_id: tx.chainId ?? null,
    pending: tx.blockNumber === null || tx.blockNumber === undefined,
  };
};

export const receipt: Operation = async (params, ctx) => {
  const { hash } = params as { hash: string };
  const r = await rpc<RpcReceipt | null>(ctx, "eth_getTransactionReceipt", [hash]);
  if (r === null) throw notFound(hash, "receipt of transaction");
  if (typeof r !== "object" || typeof r.transactionHash !== "string" || !Array.isArray(r.logs)) {
    throw malformedAnswer("receipt");
  }
  return {
    transaction_hash: r.transactionHash,
    block_hash: r.blockHash,
    block_number: r.blockNumber,
    transaction_index: r.transactionIndex,
    from: r.from.toLowerCase(),
    to: lowerOrNull(r.to),
    contract_address: lowerOrNull(r.contractAddress),
    // Post-Byzantium receipts carry status 0x1 / 0x0 (every network served is post-Byzantium).
    status: r.status === "0x1" ? "success" : "reverted",
    gas_used: r.gasUsed,
    cumulative_gas_used: r.cumulativeGasUsed,
    effective_gas_price: r.effectiveGasPrice ?? null,
    type: r.type ?? "0x0",
    logs: r.logs.map((l) => ({
      address: l.address.toLowerCase(),
      block_number: l.blockNumber,
      data: l.data,
      log_index: l.logIndex,
      topics: l.topics,
      tx_hash: l.transactionHash,
    })),
  };
};
