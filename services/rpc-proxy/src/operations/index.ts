import type { EndpointId } from "@tollgate/catalog";
import { block, blockNumber, chainId, isQuantityResult, networkInfo } from "./blocks.ts";
import { call, code, estimateGas } from "./calls.ts";
import { ens } from "./ens.ts";
import { erc20Transfers, events } from "./logs.ts";
import type { Operation } from "./shared.ts";
import { allowance, contract, erc20Balance, erc721Tokens, erc1155Balance, nftMetadata } from "./tokens.ts";
import { balance, receipt, transaction } from "./transactions.ts";

export type { Operation } from "./shared.ts";

/** The operation table, keyed by catalog endpoint id: the compiler checks it covers the catalog. */
export const OPERATIONS: Record<EndpointId, Operation> = {
  allowance,
  balance,
  blockNumber,
  block,
  call,
  chainId,
  code,
  contract,
  ens,
  erc1155Balance,
  erc20Balance,
  erc20Transfers,
  erc721Tokens,
  estimateGas,
  events,
  networkInfo,
  nftMetadata,
  receipt,
  transaction,
};

/**
 * Checks cheaper than the catalog's zod schema for the most called operations' results: true only
 * where the schema holds too (false leaves the decision to the schema).
 */
export const RESULT_CHECKS: Partial<Record<EndpointId, (data: unknown) => boolean>> = {
  blockNumber: (data) => isQuantityResult(data, "block_number"),
  chainId: (data) => isQuantityResult(data, "chain_id"),
};
