// Public types of @tollgate/devnet. Amounts are decimal strings in base units (JSON-safe bigints);
// addresses are EIP-55 checksummed, and maps keyed by address use the checksummed form.

export type Hex = `0x${string}`;
export type Address = `0x${string}`;

export interface DevnetChain {
  name: string;
  chainId: number;
  rpcUrl: string;
  port: number;
  contracts: Record<string, Address>;
  /** Tempo only: anvil itself; `rpcUrl` is the JSON-RPC shim in front of it (see tempo-shim.ts). */
  anvilRpcUrl?: string;
}

export interface DevnetAccount {
  address: Address;
  privateKey: Hex;
  /** "deployer", "A", "B", "C", "D", "facilitator", "payTo", "payer1".."payer8", "spare1".."spare5". */
  role: string;
}

export interface Devnet {
  /** Keys: "ethereum", "sepolia", the third network's name (default "tollnet"), "settlement", "tempo". */
  chains: Record<string, DevnetChain>;
  accounts: DevnetAccount[];
  demo: DemoState;
  /** Absolute path of the devnet.json written for this devnet. */
  file: string;
  /** Kills every anvil this devnet started. Idempotent. */
  stop(): Promise<void>;
}

export interface StartDevnetOptions {
  /** Where devnet.json and the compiled-artifact cache go. Default: <repo>/.tollgate */
  stateDir?: string;
  /** Name (and devnet.json key) of the third chain, chain id 4663. Default: "tollnet" */
  thirdNetworkName?: string;
  /** Interface anvil binds. Default: 127.0.0.1 */
  host?: string;
  log?: (line: string) => void;
  /** Anvils with no log line per RPC (a benchmark's; see AnvilOptions.quiet). */
  quiet?: boolean;
  /** Path of the JSON file to write. Default: <stateDir>/devnet.json (give concurrent devnets their own). */
  file?: string;
  /**
   * Where compiled artifacts are cached (artifacts-<hash of sources + solc version>.json).
   * Default: <repo>/.tollgate, even when stateDir is elsewhere, so devnets with throwaway
   * state dirs (test meshes in mkdtemp) still start warm.
   */
  cacheDir?: string;
}

/** One Transfer log of the seeded history (mints have from = the zero address). */
export interface Erc20TransferRecord {
  from: Address;
  to: Address;
  value: string;
  blockNumber: number;
  txHash: Hex;
}

export interface Erc20Demo {
  address: Address;
  name: string;
  symbol: string;
  decimals: number;
  totalSupply: string;
  /** Every account that ever held the token (including zero balances after transfers). */
  balances: Record<Address, string>;
  allowances: { owner: Address; spender: Address; amount: string }[];
  /** All Transfer events in order, the initial mint included. */
  transfers: Erc20TransferRecord[];
}

export interface Erc721TransferRecord {
  from: Address;
  to: Address;
  tokenId: string;
  blockNumber: number;
  txHash: Hex;
}

export interface Erc721Demo {
  address: Address;
  name: string;
  symbol: string;
  totalSupply: number;
  /** Token ids per owner, in tokenOfOwnerByIndex order (index 0 first). */
  owners: Record<Address, string[]>;
  /** ERC-721 Transfer events: same topic0 as ERC-20 Transfer, but 4 topics and empty data. */
  transfers: Erc721TransferRecord[];
  transferCount: number;
  /** Single-token approvals (ERC-721 Approval also shares topic0 with ERC-20 Approval). */
  approvals: { owner: Address; approved: Address; tokenId: string }[];
  operators: { owner: Address; operator: Address }[];
  interfaceIds: { erc165: Hex; erc721: Hex; erc721Metadata: Hex; erc721Enumerable: Hex };
}

export interface Erc1155Demo {
  address: Address;
  uri: string;
  ids: string[];
  /** balances[holder][id] in base units; only non-zero balances are listed. */
  balances: Record<Address, Record<string, string>>;
  interfaceIds: { erc165: Hex; erc1155: Hex; erc1155MetadataUri: Hex };
}

export interface ReverterDemo {
  address: Address;
  /** alwaysReverts() → Error(string) with this reason. */
  reason: string;
  revertingFunction: "alwaysReverts()";
  /** revertsWithCustomError() → DemoError(42, "Demo: custom error"). */
  customError: {
    function: "revertsWithCustomError()";
    signature: "DemoError(uint256,string)";
    selector: Hex;
    args: [string, string];
  };
  /** panics() → Panic(0x12) (division by zero). */
  panic: { function: "panics()"; code: number };
  /** revertsWithoutReason() → empty revert data. */
  emptyRevert: { function: "revertsWithoutReason()" };
  /** ok() → 42 (view); setValue(uint256) succeeds for non-zero, reverts "Demo: zero value" for 0. */
  ok: { function: "ok()"; result: string };
  setValue: { function: "setValue(uint256)"; zeroReason: string; current: string };
}

export interface EnsDemo {
  registry: Address;
  publicResolver: Address;
  reverseRegistrar: Address;
  /** Where viem's chain definition looks for it (code copied there with anvil_setCode). */
  universalResolver: Address;
  /** Names with forward (addr), reverse (primary name) and text records. */
  names: { name: string; node: Hex; address: Address; texts: Record<string, string> }[];
  /** A name with no records: viem's getEnsAddress returns null for it. */
  unknownName: string;
}

/** A transaction eth_estimateGas accepts: a plain ETH transfer between funded accounts. */
interface EstimateGasDemo {
  from: Address;
  to: Address;
  value: string;
}

export interface ChainDemo {
  chainId: number;
  erc20: Erc20Demo;
  erc721: Erc721Demo;
  erc1155: Erc1155Demo;
  reverter: ReverterDemo;
  ens: EnsDemo;
  multicall3: Address;
  estimateGas: EstimateGasDemo;
  /** Head block after seeding: all seeded history is at or below it. */
  seededBlock: number;
}

interface UsdcDemo {
  address: Address;
  name: string;
  symbol: string;
  decimals: number;
  /** EIP-712 domain for EIP-3009 / EIP-2612 signatures (= x402 `extra` {name, version}). */
  domain: { name: string; version: string; chainId: number; verifyingContract: Address };
  /** Payer balances after funding, base units (1000 USDC = "1000000000"). */
  balances: Record<Address, string>;
}

export interface SettlementDemo {
  chainId: number;
  /** CAIP-2 id for x402 requirements. */
  network: string;
  usdc: UsdcDemo;
  payers: Address[];
  payTo: Address;
  /** Has ETH for gas, no USDC. */
  facilitator: Address;
  multicall3: Address;
  /** x402 batch-settlement escrow, our own contract at @x402/evm's BATCH_SETTLEMENT_ADDRESS. */
  batchSettlement: Address;
  /** Its ERC-3009 deposit collector, at @x402/evm's ERC3009_DEPOSIT_COLLECTOR_ADDRESS. */
  erc3009Collector: Address;
}

/** A TIP-20 token on the Tempo chain (6 decimals). */
export interface Tip20Demo {
  address: Address;
  name: string;
  symbol: string;
  decimals: number;
  /** ISO 4217 code the token declares ("USD"). */
  currency: string;
  /** Payer balances after setup, base units (1000 tokens = "1000000000"). */
  balances: Record<Address, string>;
}

export interface TempoDemo {
  /** 4217, Tempo mainnet's id, so mppx picks USDC.e by default. */
  chainId: number;
  network: string;
  /** Predeployed by anvil's Tempo mode. */
  pathUsd: Tip20Demo;
  /** Created through the TIP-20 factory, then copied to the mainnet USDC.e address. */
  usdce: Tip20Demo;
  /** Our stand-in for the TIP-1034 precompile, at its canonical address; payers approved it for both tokens. */
  channelReserve: { address: Address; standIn: true; approvedBy: Address[] };
  feeManager: Address;
  /** Fee AMM pool that converts fees paid in USDC.e to pathUSD. */
  feePool: { userToken: Address; validatorToken: Address; reserveValidatorToken: string };
  payers: Address[];
  payTo: Address;
}

export interface DemoState {
  /** ethereum and sepolia are seeded identically (same deployer, order, addresses). */
  ethereum: ChainDemo;
  sepolia: ChainDemo;
  settlement: SettlementDemo;
  /** Local Tempo chain for MPP (pathUSD, USDC.e, channel reserve stand-in). */
  tempo: TempoDemo;
  /** Multicall3 address, present on every chain (anvil's Tempo mode predeploys it). */
  multicall3: Address;
}
