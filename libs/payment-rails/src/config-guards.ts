// Checks every rail's settings pass through, wherever they are read: an address, an amount, a URL
// on this machine, and the public development accounts (never to be paid or to pay on a real chain).
import { pbkdf2Sync } from "node:crypto";
import { ConfigError } from "@tollgate/platform";
import { type Address, bytesToHex, getAddress, isAddress } from "viem";
import { HDKey, privateKeyToAddress } from "viem/accounts";

/**
 * anvil's and Hardhat's default mnemonic. Every key it derives is public: whatever an address of
 * it receives on a real chain, anyone can take; its keys pay no real gas safely either.
 */
const PUBLIC_DEV_MNEMONIC = "test test test test test test test test test test test junk";
/** The devnet funds 20 of them (deploy/devnet/src/accounts.ts); a margin on top. */
const PUBLIC_DEV_ACCOUNTS = 30;

export function publicDevAccounts(): { addresses: Set<string>; keys: Set<string> } {
  const seed = pbkdf2Sync(PUBLIC_DEV_MNEMONIC.normalize("NFKD"), "mnemonic", 2048, 64, "sha512");
  const master = HDKey.fromMasterSeed(seed);
  const addresses = new Set<string>();
  const keys = new Set<string>();
  for (let i = 0; i < PUBLIC_DEV_ACCOUNTS; i++) {
    const key = master.derive(`m/44'/60'/0'/0/${i}`).privateKey;
    if (!key) continue;
    keys.add(bytesToHex(key));
    addresses.add(privateKeyToAddress(bytesToHex(key)));
  }
  return { addresses, keys };
}

/** A URL on this machine: the only place a devnet chain or a test facilitator can be. */
export function isLoopback(url: string): boolean {
  const host = URL.parse(url)?.hostname ?? "";
  return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export function parseAddress(name: string, value: string): Address {
  if (!isAddress(value, { strict: false }))
    throw new ConfigError(`${name} must be an address, got "${value}"`);
  return getAddress(value);
}

/** A positive decimal amount of a 6-decimal token ("1", "0.25"). */
export function decimalAmount(name: string, value: string): string {
  if (!/^(0|[1-9][0-9]{0,20})(\.[0-9]{1,6})?$/.test(value) || /^0(\.0*)?$/.test(value)) {
    throw new ConfigError(
      `${name} must be a positive decimal amount with at most 6 decimals, got "${value}"`,
    );
  }
  return value;
}
