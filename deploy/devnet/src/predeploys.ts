// Contracts that live at fixed, well-known addresses on real networks. They are deployed normally
// (so constructors set immutables) and their runtime code is then copied to the canonical address.
import { getAddress } from "viem";
import { mainnet, sepolia } from "viem/chains";
import type { ChainRpc } from "./chain.ts";
import type { Artifacts } from "./compile.ts";
import type { Address } from "./types.ts";

export const MULTICALL3_ADDRESS: Address = getAddress("0xcA11bde05977b3631167028862bE2a173976CA11");

/** Taken from viem's own chain objects, because that is where getEnsAddress/getEnsName will call. */
export const ENS_UNIVERSAL_RESOLVER: { ethereum: Address; sepolia: Address } = {
  ethereum: getAddress(mainnet.contracts.ensUniversalResolver.address),
  sepolia: getAddress(sepolia.contracts.ensUniversalResolver.address),
};

/** Multicall3 has no constructor state, so its runtime code can be placed directly. */
export async function placeMulticall3(rpc: ChainRpc, artifacts: Artifacts): Promise<Address> {
  await rpc.setCode(MULTICALL3_ADDRESS, artifacts.Multicall3.deployedBytecode);
  return MULTICALL3_ADDRESS;
}

/** Copy the runtime code (immutables included) of a deployed contract to `target`. */
export async function copyCode(rpc: ChainRpc, from: Address, target: Address): Promise<void> {
  await rpc.setCode(target, await rpc.getCode(from));
}
