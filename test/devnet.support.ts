// The fixture of the devnet suites (devnet.test.ts, devnet-usdc.test.ts): a devnet of its own per
// file (its own devnet.json, so concurrent suites do not overwrite each other's), and viem clients,
// signers and wallets on its chains.
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Devnet, startDevnet } from "@tollgate/devnet";
import { createPublicClient, createWalletClient, defineChain, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { mainnet, sepolia } from "viem/chains";
import { afterAll, beforeAll } from "vitest";

export let devnet: Devnet;
const chainFor = (name: string) => {
  const chain = devnet.chains[name];
  if (!chain) throw new Error(`no chain ${name}`);
  const known: Record<string, typeof mainnet | typeof sepolia> = { ethereum: mainnet, sepolia };
  const definition =
    known[name] ??
    defineChain({
      id: chain.chainId,
      name,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [chain.rpcUrl] } },
      contracts: { multicall3: { address: devnet.demo.multicall3 } },
    });
  return { definition, rpcUrl: chain.rpcUrl };
};
export const client = (name: string) => {
  const { definition, rpcUrl } = chainFor(name);
  return createPublicClient({ chain: definition, transport: http(rpcUrl, { retryCount: 0 }) });
};
/** Local (viem-signed) account of a devnet role. */
export const signer = (role: string) => {
  const account = devnet.accounts.find((a) => a.role === role);
  if (!account) throw new Error(`no account ${role}`);
  return privateKeyToAccount(account.privateKey);
};
export const wallet = (name: string, role: string) => {
  const { definition, rpcUrl } = chainFor(name);
  return createWalletClient({
    account: signer(role),
    chain: definition,
    transport: http(rpcUrl, { retryCount: 0 }),
  });
};

// Own devnet.json so concurrent suites do not overwrite each other's file.
const file = join(tmpdir(), `tollgate-devnet-test-${process.pid}.json`);

/** Starts the devnet (five chains) before the describe's tests; stops it after. */
export function useDevnet() {
  beforeAll(async () => {
    devnet = await startDevnet({ file });
  }, 60_000);

  afterAll(async () => {
    await devnet?.stop();
    rmSync(file, { force: true });
  });
}
