// The local Tempo chain for MPP: anvil's own Tempo mode (`--network tempo --hardfork t4`, chain id
// 4217 like Tempo mainnet, so mppx defaults to USDC.e), with
//   - pathUSD, predeployed by anvil (every dev account starts with 2^64-1 raw units);
//   - USDC.e at its mainnet address: anvil does not predeploy it, so a TIP-20 is created through the
//     factory and its code and storage are copied there;
//   - a USDC.e/pathUSD fee pool, so fees can be paid in USDC.e;
//   - the TIP-1034 channel reserve at its canonical address: our stand-in contract, plus the
//     JSON-RPC shim (tempo-shim.ts) that seeds each open's expiringNonceHash;
//   - payers 1..8 holding exactly 1,000 of each currency and having approved the reserve.
import {
  type Abi,
  createClient,
  encodeFunctionData,
  getAddress,
  type Hex,
  http,
  keccak256,
  maxUint256,
  parseUnits,
  toHex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { sendTransactionSync } from "viem/actions";
import { Abis, Addresses } from "viem/tempo";
import { tempo } from "viem/tempo/chains";
import { byRole } from "./accounts.ts";
import type { AnvilNode } from "./anvil.ts";
import { ChainRpc } from "./chain.ts";
import type { Artifacts } from "./compile.ts";
import { startTempoShim, type TempoShim } from "./tempo-shim.ts";
import type { Address, DevnetAccount, TempoDemo, Tip20Demo } from "./types.ts";

export const TEMPO_CHAIN_ID = 4217;
export const TEMPO_ADDRESSES = {
  pathUsd: getAddress(Addresses.pathUsd),
  usdce: getAddress("0x20c000000000000000000000b9537d11c60e8b50"),
  channelReserve: getAddress(Addresses.tip20ChannelReserve),
  feeManager: getAddress(Addresses.feeManager),
  tip20Factory: getAddress(Addresses.tip20Factory),
} as const;

/** What every payer holds of each currency after setup (6 decimals). */
const TEMPO_PER_PAYER = "1000";
/** pathUSD the deployer puts in the USDC.e/pathUSD fee pool. */
const FEE_POOL_PATH_USD = "100000";
/** USDC.e minted to the deployer beyond the payers' share (to fund accounts a demo adds later). */
const DEPLOYER_USDCE = "100000";

/**
 * anvil's own Tempo mode. Mixed mining: a transaction is mined at once (setup and payments never
 * wait for an interval), and an empty block every second keeps the head's timestamp current, which
 * expiring-nonce transactions need (valid_before must be within 30 s of the head block).
 */
export const TEMPO_ANVIL_ARGS = [
  "--network",
  "tempo",
  "--hardfork",
  "t4",
  "--block-time",
  "1",
  "--mixed-mining",
];

/** Set up a started Tempo anvil and start the shim in front of it (stop the shim with the devnet). */
export async function setupTempo(
  node: AnvilNode,
  artifacts: Artifacts,
  accounts: DevnetAccount[],
  log?: (line: string) => void,
): Promise<{ shim: TempoShim; demo: TempoDemo }> {
  const rpc = new ChainRpc(node.rpcUrl);
  const { pathUsd, usdce, channelReserve, feeManager } = TEMPO_ADDRESSES;
  const deployer = byRole(accounts, "deployer");
  const payers = accounts.filter((a) => a.role.startsWith("payer"));
  const perPayer = parseUnits(TEMPO_PER_PAYER, 6);
  const balanceOf = (token: Address, holder: Address) =>
    rpc.read<bigint>(token, Abis.tip20, "balanceOf", [holder]);
  // Each account's setup is one Tempo transaction with a batch of calls (few round trips).
  const batch = (role: string, calls: Call[]) => sendBatch(node.rpcUrl, accounts, role, calls);

  const shimStarted = startTempoShim({
    anvilUrl: node.rpcUrl,
    reserve: channelReserve,
    host: node.host,
    log,
  });
  try {
    await Promise.all([
      createUsdce(rpc, deployer),
      rpc.setCode(channelReserve, artifacts.ChannelReserveStandIn.deployedBytecode),
    ]);
    const issuer = await rpc.read<Hex>(usdce, Abis.tip20, "ISSUER_ROLE");
    await Promise.all([
      batch("deployer", [
        call(usdce, Abis.tip20, "grantRole", [issuer, deployer]),
        call(usdce, Abis.tip20, "mint", [deployer, parseUnits(DEPLOYER_USDCE, 6)]),
        ...payers.map((payer) => call(usdce, Abis.tip20, "mint", [payer.address, perPayer])),
        // One raw unit of each token held by the reserve: its balance slots then exist. anvil's
        // estimate for a payer's open is a flat 534,000 gas; an open uses ~330k, and creating the
        // reserve's balance slot as well would add 250k and run it out of gas.
        call(usdce, Abis.tip20, "mint", [channelReserve, 1n]),
        call(pathUsd, Abis.tip20, "transfer", [channelReserve, 1n]),
        call(feeManager, Abis.feeAmm, "mint", [usdce, pathUsd, parseUnits(FEE_POOL_PATH_USD, 6), deployer]),
      ]),
      // Payers approve the stand-in, since deposits move with transferFrom (the precompile needs no
      // approval), and give the deployer their pathUSD beyond 1,000 (anvil gives 2^64-1 raw units)
      // plus 1 pathUSD for the fee, which comes back below.
      ...payers.map(async (payer) => {
        const surplus = (await balanceOf(pathUsd, payer.address)) - perPayer + parseUnits("1", 6);
        await batch(payer.role, [
          call(usdce, Abis.tip20, "approve", [channelReserve, maxUint256]),
          call(pathUsd, Abis.tip20, "approve", [channelReserve, maxUint256]),
          call(pathUsd, Abis.tip20, "transfer", [deployer, surplus]),
        ]);
      }),
    ]);
    const shortfalls = await Promise.all(
      payers.map(async (payer) => perPayer - (await balanceOf(pathUsd, payer.address))),
    );
    await batch(
      "deployer",
      payers.map((payer, i) => call(pathUsd, Abis.tip20, "transfer", [payer.address, shortfalls[i]])),
    );

    const addresses = payers.map((payer) => payer.address);
    const [pathUsdDemo, usdceDemo, pool] = await Promise.all([
      tokenDemo(rpc, pathUsd, addresses),
      tokenDemo(rpc, usdce, addresses),
      rpc.read<{ reserveValidatorToken: bigint }>(feeManager, Abis.feeAmm, "getPool", [usdce, pathUsd]),
    ]);
    const demo: TempoDemo = {
      chainId: TEMPO_CHAIN_ID,
      network: `eip155:${TEMPO_CHAIN_ID}`,
      pathUsd: pathUsdDemo,
      usdce: usdceDemo,
      channelReserve: { address: channelReserve, standIn: true, approvedBy: addresses },
      feeManager,
      feePool: {
        userToken: usdce,
        validatorToken: pathUsd,
        reserveValidatorToken: String(pool.reserveValidatorToken),
      },
      payers: addresses,
      payTo: byRole(accounts, "payTo"),
    };
    return { shim: await shimStarted, demo };
  } catch (err) {
    await shimStarted.then((shim) => shim.stop()).catch(() => {});
    throw err;
  }
}

interface Call {
  to: Address;
  data: Hex;
}

function call(to: Address, abi: Abi, functionName: string, args: unknown[]): Call {
  return { to, data: encodeFunctionData({ abi, functionName, args }) };
}

/** One Tempo (0x76) transaction from `role` running `calls` in order, fees in pathUSD. */
async function sendBatch(
  rpcUrl: string,
  accounts: DevnetAccount[],
  role: string,
  calls: Call[],
): Promise<void> {
  const signer = accounts.find((a) => a.role === role);
  if (!signer) throw new Error(`no devnet account with role ${role}`);
  const client = createClient({
    chain: tempo,
    transport: http(rpcUrl, { retryCount: 0 }),
    account: privateKeyToAccount(signer.privateKey),
  });
  const receipt = await sendTransactionSync(client, {
    calls,
    feeToken: TEMPO_ADDRESSES.pathUsd,
    // anvil answers a flat estimate for call batches (it does not run them), and each call here
    // may create a storage slot (250,000 gas on Tempo): budget for that instead.
    gas: 500_000n + 300_000n * BigInt(calls.length),
  } as unknown as Parameters<typeof sendTransactionSync>[1]);
  if (receipt.status !== "success") throw new Error(`tempo setup batch from ${role} reverted`);
}

/**
 * anvil's Tempo genesis has pathUSD but no USDC.e: create a TIP-20 through the factory, then copy
 * its storage (read from a prestate diff of the creating transaction) to USDC.e's address. TIP-20s
 * are precompiles keyed by address prefix, so the marker code 0xef plus the storage is the token.
 */
async function createUsdce(rpc: ChainRpc, deployer: Address): Promise<void> {
  const { tip20Factory, usdce, pathUsd } = TEMPO_ADDRESSES;
  const salt = keccak256(toHex("tollgate devnet USDC.e"));
  const created = await rpc.write(deployer, tip20Factory, Abis.tip20Factory, "createToken", [
    "USDC.e",
    "USDC.e",
    "USD",
    pathUsd,
    deployer,
    salt,
  ]);
  const token = await rpc.read<Address>(tip20Factory, Abis.tip20Factory, "getTokenAddress", [deployer, salt]);
  const diff = await rpc.request<{ post: Record<string, { storage?: Record<Hex, Hex> }> }>(
    "debug_traceTransaction",
    [created.txHash, { tracer: "prestateTracer", tracerConfig: { diffMode: true } }],
  );
  const storage = Object.entries(diff.post).find(([address]) => getAddress(address) === token)?.[1].storage;
  if (!storage) throw new Error(`createToken wrote no storage for ${token}`);
  await rpc.request("anvil_setCode", [usdce, "0xef"]);
  await Promise.all(
    Object.entries(storage).map(([slot, value]) => rpc.request("anvil_setStorageAt", [usdce, slot, value])),
  );
}

async function tokenDemo(rpc: ChainRpc, token: Address, holders: Address[]): Promise<Tip20Demo> {
  const read = <T>(functionName: string, args: unknown[] = []) =>
    rpc.read<T>(token, Abis.tip20, functionName, args);
  const [name, symbol, decimals, currency, ...amounts] = await Promise.all([
    read<string>("name"),
    read<string>("symbol"),
    read<number>("decimals"),
    read<string>("currency"),
    ...holders.map((holder) => read<bigint>("balanceOf", [holder])),
  ]);
  const balances: Record<Address, string> = {};
  holders.forEach((holder, i) => {
    balances[holder] = String(amounts[i]);
  });
  return { address: token, name, symbol, decimals: Number(decimals), currency, balances };
}
