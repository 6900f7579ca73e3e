// Sign-In with Ethereum (EIP-4361). The server writes the message (its nonce, this dashboard's
// domain and URI, the chain, an expiry) and keeps it under its nonce; sign-in takes the nonce out
// (single use across replicas: Redis GETDEL), requires the very message it issued, checks its
// times with viem's validateSiweMessage and the signature with viem (EOA, EIP-1271, ERC-6492).
import { type Address, getAddress, type Hex } from "viem";
import { createSiweMessage, generateSiweNonce, parseSiweMessage, validateSiweMessage } from "viem/siwe";
import type { Kv } from "./kv.ts";

/** Checks a wallet's signature of `message` (EOA recovery, or a contract wallet on the chain). */
export type SignatureCheck = (args: {
  address: Address;
  message: string;
  signature: Hex;
}) => Promise<boolean>;

export interface SiweDeps {
  kv: Kv;
  now: () => number;
  /** The dashboard's origin: the message's URI, and its host the message's domain. */
  origin: string;
  chainId: number;
  nonceTtlMs: number;
  checkSignature: SignatureCheck;
}

export type SiweOutcome = { ok: true; address: Address } | { ok: false; reason: string };

const STATEMENT = "Sign in to the Tollgate dashboard to manage your API keys.";

export function createSiwe(deps: SiweDeps) {
  const domain = new URL(deps.origin).host;
  return {
    /** A fresh message for `address` to sign; its nonce is kept for `nonceTtlMs`, for one sign-in. */
    async issue(address: string): Promise<{ message: string; nonce: string; expiresAt: string }> {
      const nonce = generateSiweNonce();
      const now = deps.now();
      const expirationTime = new Date(now + deps.nonceTtlMs);
      const message = createSiweMessage({
        address: getAddress(address),
        chainId: deps.chainId,
        domain,
        nonce,
        uri: deps.origin,
        version: "1",
        statement: STATEMENT,
        issuedAt: new Date(now),
        expirationTime,
      });
      await deps.kv.set(`n:${nonce}`, message, deps.nonceTtlMs);
      return { message, nonce, expiresAt: expirationTime.toISOString() };
    },

    /** Verifies a signed message; its nonce is spent whatever the outcome. */
    async verify(message: string, signature: Hex): Promise<SiweOutcome> {
      const parsed = parseSiweMessage(message);
      if (!parsed.nonce || !parsed.address)
        return { ok: false, reason: "the message is not a sign-in message" };
      const issued = await deps.kv.take(`n:${parsed.nonce}`);
      if (issued === null) return { ok: false, reason: "the nonce is unknown, already used or expired" };
      // Exactly what was issued: domain, URI, chain, address, times and statement all bound.
      if (issued !== message)
        return { ok: false, reason: "the message is not the one issued for this nonce" };
      const valid = validateSiweMessage({
        message: parsed,
        domain,
        nonce: parsed.nonce,
        address: parsed.address,
        time: new Date(deps.now()),
      });
      if (!valid || parsed.uri !== deps.origin || parsed.chainId !== deps.chainId) {
        return { ok: false, reason: "the message has expired or is not for this dashboard" };
      }
      const signed = await deps.checkSignature({ address: parsed.address, message, signature });
      if (!signed) return { ok: false, reason: "the signature is not the address's" };
      return { ok: true, address: parsed.address };
    },
  };
}

export type Siwe = ReturnType<typeof createSiwe>;
