import type { EndpointId } from "@tollgate/catalog";
import { block, blockNumber, chainId, networkInfo } from "./blocks.ts";
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
