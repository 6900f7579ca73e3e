/**
 * The networks the API serves. `ethereum` and `sepolia` are served by every chain
 * endpoint; the third chain (0x1237) is reachable on network-info only (spec 1.2).
 * Its public name is the operator's brand, so it comes from the environment.
 */
const THIRD_NETWORK_NAME = process.env.TOLLGATE_THIRD_NETWORK ?? "tollnet";

export interface NetworkInfo {
  name: string;
  chainId: number;
  /** Chain id as the API shows it (hex quantity). */
  chainIdHex: string;
  testnet: boolean;
  /** Whether every chain endpoint serves it, or network-info only. */
  scope: "all" | "network-info";
}

export const NETWORKS: readonly NetworkInfo[] = [
  { name: "ethereum", chainId: 1, chainIdHex: "0x1", testnet: false, scope: "all" },
  { name: "sepolia", chainId: 11155111, chainIdHex: "0xaa36a7", testnet: true, scope: "all" },
  { name: THIRD_NETWORK_NAME, chainId: 0x1237, chainIdHex: "0x1237", testnet: false, scope: "network-info" },
];

export const DEFAULT_NETWORK = "ethereum";

/** Names of the networks every chain endpoint serves. */
export const CHAIN_NETWORKS = NETWORKS.filter((n) => n.scope === "all").map((n) => n.name) as [
  string,
  ...string[],
];
/** Every network name, for network-info. */
export const ALL_NETWORKS = NETWORKS.map((n) => n.name) as [string, ...string[]];
