// The x402 settlement chain: a USDC-like EIP-3009 token, funded payers, Multicall3, and the
// batch-settlement escrow (settlement contract + ERC-3009 deposit collector).
import { parseUnits } from "viem";
import { byRole } from "./accounts.ts";
import { placeBatchSettlement } from "./batch-settlement.ts";
import type { ChainRpc } from "./chain.ts";
import type { Artifacts } from "./compile.ts";
import { placeMulticall3 } from "./predeploys.ts";
import type { Address, DevnetAccount, SettlementDemo } from "./types.ts";

/** Base Sepolia's chain id, so x402 requirements use a familiar CAIP-2 network (eip155:84532). */
export const SETTLEMENT_CHAIN_ID = 84532;
const USDC_PER_PAYER = "1000";

export async function setupSettlement(
  rpc: ChainRpc,
  artifacts: Artifacts,
  accounts: DevnetAccount[],
): Promise<SettlementDemo> {
  const { abi } = artifacts.DemoUSDC;
  const deployer = byRole(accounts, "deployer");
  const usdc = await rpc.deploy(deployer, artifacts.DemoUSDC, [deployer]);
  const payers = accounts.filter((a) => a.role.startsWith("payer")).map((a) => a.address);
  for (const payer of payers)
    await rpc.write(deployer, usdc, abi, "mint", [payer, parseUnits(USDC_PER_PAYER, 6)]);

  const balances: Record<Address, string> = {};
  for (const payer of payers)
    balances[payer] = String(await rpc.read<bigint>(usdc, abi, "balanceOf", [payer]));
  const name = await rpc.read<string>(usdc, abi, "name");
  return {
    chainId: SETTLEMENT_CHAIN_ID,
    network: `eip155:${SETTLEMENT_CHAIN_ID}`,
    usdc: {
      address: usdc,
      name,
      symbol: await rpc.read<string>(usdc, abi, "symbol"),
      decimals: Number(await rpc.read<number>(usdc, abi, "decimals")),
      domain: {
        name,
        version: await rpc.read<string>(usdc, abi, "version"),
        chainId: SETTLEMENT_CHAIN_ID,
        verifyingContract: usdc,
      },
      balances,
    },
    payers,
    payTo: byRole(accounts, "payTo"),
    facilitator: byRole(accounts, "facilitator"),
    multicall3: await placeMulticall3(rpc, artifacts),
    ...(await placeBatchSettlement(rpc, artifacts)),
  };
}
