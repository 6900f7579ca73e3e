// What the x402 `exact` scheme checks of a credential on its own, before the facilitator is asked:
// the EIP-3009 payload's shape and the payment's identity (its replay-protection key), the terms
// (network, token, recipient, the exact price, the validity window), and the signature (a forged
// payload costs us one recovery, not a round trip or the in-process facilitator's chain reads).
import { createHash } from "node:crypto";
import { priceAtomic } from "@tollgate/catalog";
import { chainIdOf } from "@tollgate/payment-rails";
import type { PaymentPayload } from "@x402/core/types";
import { domainSeparator, type Hex, keccak256, recoverAddress, toHex } from "viem";
import { z } from "zod";
import type { SettlementChain } from "../adapters/settlement-chain.ts";
import type { X402Config } from "../config.ts";
import { type Claim, FacilitatorUnavailableError, type PricedCall } from "../core/types.ts";
import { address, hex32, signatureHex, uint256 } from "./eip712-fields.ts";

/** The exact scheme's facilitator refuses authorizations expiring within this many seconds. */
const EXPIRY_MARGIN_SECONDS = 6;
/** A settled payment is remembered until it could no longer be collected, at most this long. */
export const SETTLED_MAX_MS = 7 * 24 * 3_600_000;
/**
 * The latest an authorization may expire: its used record is kept until then (SETTLED_MAX_MS),
 * so a longer-lived one could outlast it. The official client signs for the offer's timeout.
 */
const VALID_BEFORE_MAX_SECONDS = SETTLED_MAX_MS / 1000;
/** ERC-6492 wraps the signature of a wallet not deployed yet; it ends with this magic suffix. */
const ERC6492_SUFFIX = "6492649264926492649264926492649264926492649264926492649264926492";

/** EIP-3009's struct type hash, for the digest the payer signed (see digestOf). */
const AUTHORIZATION_TYPEHASH = keccak256(
  toHex(
    "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)",
  ),
);
/** An EIP-712 word: a 20- or 32-byte hex value, or a decimal uint256, as 64 hex digits. */
const hexWord = (hex: string): string => hex.slice(2).toLowerCase().padStart(64, "0");
const uintWord = (decimal: string): string => BigInt(decimal).toString(16).padStart(64, "0");

// Strict: a payload that also carries another transfer method (e.g. permit2Authorization) would be
// routed to it by the facilitator while we keyed replay protection on the EIP-3009 nonce.
const eip3009Payload = z.strictObject({
  signature: signatureHex,
  authorization: z.strictObject({
    from: address,
    to: address,
    value: uint256,
    validAfter: uint256,
    validBefore: uint256,
    nonce: hex32,
  }),
});

type Eip3009Authorization = z.infer<typeof eip3009Payload>["authorization"];

export interface ExactPayment {
  payload: PaymentPayload;
  signature: Hex;
  authorization: Eip3009Authorization;
}

function iso(unixSeconds: bigint): string {
  const ms = Number(unixSeconds) * 1000;
  return Number.isFinite(ms) && ms < 8.64e15 ? new Date(ms).toISOString() : `${unixSeconds}`;
}

export function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** An `exact` payload (its scheme already checked) as the payment it is, or why it is none. */
export function claimExact(payload: PaymentPayload): Claim<ExactPayment> {
  const inner = eip3009Payload.safeParse(payload.payload);
  if (!inner.success) {
    const issue = inner.error.issues[0];
    return {
      kind: "invalid",
      reason: `the exact payload must be an EIP-3009 authorization: payload.${issue?.path.join(".")}: ${issue?.message}`,
    };
  }
  const { authorization, signature } = inner.data;
  return {
    kind: "payment",
    payment: {
      key: paymentKey(payload.accepted.network, payload.accepted.asset, authorization),
      payer: authorization.from,
      amount: authorization.value,
      asset: payload.accepted.asset,
      paymentNetwork: payload.accepted.network,
      // Settling sends the transfer from the payer's balance, in a transaction we pay gas for.
      draw: authorization.value,
      payload: { payload, signature: signature as Hex, authorization },
    },
  };
}

/** Our own checks of the terms, each with a precise reason (before the signature and the facilitator's). */
export function termsRefusal(cfg: X402Config, call: PricedCall, payment: ExactPayment): string | undefined {
  const { accepted } = payment.payload;
  const { authorization } = payment;
  if (accepted.network !== cfg.network) {
    return `the payment is for network ${accepted.network}, but this API settles on ${cfg.network}`;
  }
  if (!sameAddress(accepted.asset, cfg.asset)) {
    return `the payment is in token ${accepted.asset}, but this API takes ${cfg.assetSymbol} ${cfg.asset}`;
  }
  if (!sameAddress(accepted.payTo, cfg.payTo) || !sameAddress(authorization.to, cfg.payTo)) {
    return `the payment pays ${authorization.to}, but this API's payTo is ${cfg.payTo}`;
  }
  const price = priceAtomic(call.endpoint.price, cfg.assetDecimals);
  const paid = BigInt(authorization.value);
  if (BigInt(accepted.amount) !== paid) return "the signed amount does not equal the accepted amount";
  if (paid < price) {
    return `underpaid: the payment is ${paid} atomic units, ${call.endpoint.path} costs ${price} (${call.endpoint.price} USD)`;
  }
  if (paid > price) {
    return `overpaid: scheme exact takes exactly the price, ${price} atomic units (${call.endpoint.price} USD), not ${paid}`;
  }
  const now = BigInt(Math.floor(Date.now() / 1000));
  const validBefore = BigInt(authorization.validBefore);
  if (validBefore < now + BigInt(EXPIRY_MARGIN_SECONDS)) {
    return `the payment authorization expired at ${iso(validBefore)}; sign a new payment`;
  }
  if (validBefore > now + BigInt(VALID_BEFORE_MAX_SECONDS)) {
    return `payload.authorization.validBefore: the authorization must expire within ${VALID_BEFORE_MAX_SECONDS / 86_400} days; sign one that expires sooner`;
  }
  const validAfter = BigInt(authorization.validAfter);
  if (validAfter > now) return `the payment authorization is not valid until ${iso(validAfter)}`;
  return undefined;
}

/**
 * Does the signature belong to the payer? A plain (65-byte) ECDSA signature must recover to
 * `from`; anything else is only plausible from a smart wallet (ERC-1271 code at `from`, or an
 * ERC-6492 wrapper for one not deployed yet), which the facilitator then checks on chain. Its
 * refusal, or whether the signature was recovered to the payer.
 */
export function signatureCheck(
  cfg: X402Config,
  chain: SettlementChain | undefined,
): (payment: ExactPayment) => Promise<string | { recovered: boolean }> {
  // The token's EIP-712 domain separator: the same for every payment.
  const domain = domainSeparator({
    domain: {
      name: cfg.assetName,
      version: cfg.assetVersion,
      chainId: chainIdOf(cfg.network),
      verifyingContract: cfg.asset,
    },
  });
  return async (payment) => {
    const { authorization, signature } = payment;
    const from = authorization.from as Hex;
    const unproven = { recovered: false };
    if (signature.toLowerCase().endsWith(ERC6492_SUFFIX)) return unproven;
    if (signature.length === 132) {
      try {
        const signer = await recoverAddress({ hash: digestOf(domain, authorization), signature });
        if (sameAddress(signer, from)) return { recovered: true };
      } catch {
        // Not a valid secp256k1 signature at all: only a smart wallet could mean something by it.
      }
    }
    if (!chain) return unproven; // cannot tell a smart wallet without reading the chain: the facilitator decides
    try {
      if (await chain.hasCode(from)) return unproven;
    } catch {
      throw new FacilitatorUnavailableError(
        "the settlement chain is unreachable (checking the payer's wallet)",
      );
    }
    return "the signature does not match the authorization (invalid_exact_evm_signature)";
  };
}

/**
 * The EIP-712 digest of a TransferWithAuthorization under the token's domain: viem's
 * hashTypedData, less the domain's and the type's hashes each time (two keccaks, not eight).
 */
function digestOf(domain: Hex, a: Eip3009Authorization): Hex {
  const struct = keccak256(
    `${AUTHORIZATION_TYPEHASH}${hexWord(a.from)}${hexWord(a.to)}${uintWord(a.value)}${uintWord(a.validAfter)}${uintWord(a.validBefore)}${hexWord(a.nonce)}`,
  );
  return keccak256(`0x1901${domain.slice(2)}${struct.slice(2)}`);
}

/**
 * What makes an EIP-3009 payment unique on chain: the token (chain + contract), the payer and the
 * payer-chosen nonce. Signature bytes are not part of it, so a re-encoded or re-signed copy of the
 * same authorization is the same payment.
 */
function paymentKey(network: string, asset: string, authorization: Eip3009Authorization): string {
  const chain = network.startsWith("eip155:") ? network.slice("eip155:".length) : network;
  const digest = createHash("sha256")
    .update(
      `${chain}|${asset.toLowerCase()}|${authorization.from.toLowerCase()}|${authorization.nonce.toLowerCase()}`,
    )
    .digest("hex");
  return `x402-exact:${digest}`;
}
