// The x402 `batch-settlement` escrow on the settlement chain: our own settlement and ERC-3009
// deposit collector contracts (the published interface), placed where the official @x402/evm SDK
// calls them. Both are written for anvil_setCode: no constructor state, no immutables.
import { getAddress } from "viem";
import type { ChainRpc } from "./chain.ts";
import type { Artifacts } from "./compile.ts";
import type { Address } from "./types.ts";

/** @x402/evm's BATCH_SETTLEMENT_ADDRESS (its CREATE2 address on real chains). */
export const BATCH_SETTLEMENT_ADDRESS: Address = getAddress("0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003");
/** @x402/evm's ERC3009_DEPOSIT_COLLECTOR_ADDRESS. */
export const ERC3009_DEPOSIT_COLLECTOR_ADDRESS: Address = getAddress(
  "0x4020806089470a89826cB9fB1f4059150b550004",
);

export async function placeBatchSettlement(
  rpc: ChainRpc,
  artifacts: Artifacts,
): Promise<{ batchSettlement: Address; erc3009Collector: Address }> {
  await rpc.setCode(BATCH_SETTLEMENT_ADDRESS, artifacts.BatchSettlement.deployedBytecode);
  await rpc.setCode(ERC3009_DEPOSIT_COLLECTOR_ADDRESS, artifacts.ERC3009DepositCollector.deployedBytecode);
  return { batchSettlement: BATCH_SETTLEMENT_ADDRESS, erc3009Collector: ERC3009_DEPOSIT_COLLECTOR_ADDRESS };
}
