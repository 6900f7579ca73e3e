// Funded test accounts: anvil's well-known dev mnemonic (public, test-only keys), one role each.
import { pbkdf2Sync } from "node:crypto";
import { bytesToHex } from "viem";
import { HDKey, privateKeyToAddress } from "viem/accounts";
import type { Address, DevnetAccount } from "./types.ts";

/** anvil's default mnemonic; every devnet chain funds the same accounts with 10,000 ETH. */
export const DEV_MNEMONIC = "test test test test test test test test test test test junk";

const PAYER_COUNT = 8;

/** Role of each derivation index m/44'/60'/0'/0/i. */
const ROLES: readonly string[] = [
  "deployer", // deploys and owns every demo contract, mints tokens
  "A", // main demo holder: DEMO, DNFT, items; primary ENS name demo.eth
  "B", // second holder; ENS alice.eth
  "C", // third holder
  "D", // second ERC-20 spender; receiver of the estimateGas demo transfer
  "facilitator", // x402 facilitator: ETH for gas, no tokens
  "payTo", // x402 payment receiver
  ...Array.from({ length: PAYER_COUNT }, (_, i) => `payer${i + 1}`), // 1,000 USDC each
  ...Array.from({ length: 5 }, (_, i) => `spare${i + 1}`), // ETH only, for tests that need fresh accounts
];

export function devAccounts(): DevnetAccount[] {
  // BIP-39 seed via native PBKDF2 (viem's JS mnemonicToAccount repeats it per account, ~10 ms each).
  const seed = pbkdf2Sync(DEV_MNEMONIC.normalize("NFKD"), "mnemonic", 2048, 64, "sha512");
  const master = HDKey.fromMasterSeed(seed);
  return ROLES.map((role, i) => {
    const key = master.derive(`m/44'/60'/0'/0/${i}`).privateKey;
    if (!key) throw new Error(`cannot derive dev account ${i}`);
    const privateKey = bytesToHex(key);
    return { address: privateKeyToAddress(privateKey), privateKey, role };
  });
}

/** Address of the account with `role`; throws for an unknown role so typos fail loudly. */
export function byRole(accounts: readonly DevnetAccount[], role: string): Address {
  const account = accounts.find((a) => a.role === role);
  if (!account) throw new Error(`no devnet account with role ${role}`);
  return account.address;
}
