// Who signed an x402-batch voucher, and which channel a channel config names, at the cost a
// per-call hot path can carry. Every voucher is a new signature, so the recovery memo
// (signature-memo.ts) never helps; viem's recovery is pure-JS curve math (1.5-3 ms here), the
// largest cost of a voucher call. libsecp256k1 (libs/payment-rails secp256k1.ts: native, else WebAssembly) recovers
// the same key in a fraction of that. The digest is the SDK's EIP-712 Voucher digest
// (its voucherTypes and domain) with the domain separator computed once per chain and the struct
// hash written into fixed buffers (checked against viem's hashStruct of voucherTypes at start-up).
import { libsecp256k1 } from "@tollgate/payment-rails";
import { BATCH_SETTLEMENT_ADDRESS, BATCH_SETTLEMENT_DOMAIN, voucherTypes } from "@x402/evm";
import { computeChannelId } from "@x402/evm/batch-settlement/client";
import { domainSeparator, getAddress, type Hex, hashStruct, hexToBytes, keccak256, toBytes } from "viem";

type ChannelConfig = Parameters<typeof computeChannelId>[0];
/** A channel config as decoded (addresses checked as hex, not yet typed as such). */
type DecodedConfig = {
  [K in keyof ChannelConfig]: ChannelConfig[K] extends string ? string : ChannelConfig[K];
};

const separators = new Map<number, Uint8Array>();

function separatorOf(chainId: number): Uint8Array {
  let separator = separators.get(chainId);
  if (!separator) {
    separator = hexToBytes(
      domainSeparator({
        domain: {
          ...BATCH_SETTLEMENT_DOMAIN,
          chainId,
          verifyingContract: getAddress(BATCH_SETTLEMENT_ADDRESS),
        },
      }),
    );
    separators.set(chainId, separator);
  }
  return separator;
}

const UINT128_LIMIT = 1n << 128n;
/** typeHash ‖ channelId ‖ amount: the Voucher's EIP-712 encodeData, three 32-byte words. */
const structWords = new Uint8Array(96);
structWords.set(toBytes(keccak256(toBytes("Voucher(bytes32 channelId,uint128 maxClaimableAmount)"))), 0);
/** 0x1901 ‖ domain separator ‖ struct hash: what the payer signed the hash of. */
const digestInput = new Uint8Array(66);
digestInput.set([0x19, 0x01], 0);

/**
 * The Voucher's EIP-712 struct hash, written straight into fixed buffers (viem's generic hashStruct
 * costs several times the keccak it ends in). The buffers are reused: the caller is synchronous.
 */
function voucherStructHash(channelId: string, amount: bigint): Uint8Array {
  structWords.set(Buffer.from(channelId.slice(2), "hex"), 32);
  structWords.set(Buffer.from(amount.toString(16).padStart(64, "0"), "hex"), 64);
  return keccak256(structWords, "bytes");
}

// The fast encoding is the SDK's own (its voucherTypes through viem), or the service does not start.
{
  const sample = { channelId: `0x${"ab".repeat(32)}` as Hex, maxClaimableAmount: 123_456_789n };
  const expected = hashStruct({ types: voucherTypes, primaryType: "Voucher", data: sample });
  const actual = voucherStructHash(sample.channelId, sample.maxClaimableAmount);
  if (Buffer.from(actual).toString("hex") !== expected.slice(2))
    throw new Error("the x402-batch Voucher encoding differs from the SDK's voucherTypes");
}

/**
 * The address that signed the voucher (lowercase), or undefined when the signature is not a plain
 * 65-byte ECDSA signature this can recover (the caller then leaves it to the SDK's verification).
 */
export function voucherSigner(
  chainId: number,
  voucher: { channelId: string; maxClaimableAmount: string; signature: string },
): string | undefined {
  const signature = voucher.signature;
  if (signature.length !== 132) return undefined;
  const v = Number.parseInt(signature.slice(130), 16);
  const recoveryId = v >= 27 ? v - 27 : v;
  if (recoveryId !== 0 && recoveryId !== 1) return undefined;
  const amount = BigInt(voucher.maxClaimableAmount);
  // Out of uint128: the SDK's verification refuses it, with its reason.
  if (amount >= UINT128_LIMIT) return undefined;
  let key: Uint8Array | null;
  try {
    digestInput.set(separatorOf(chainId), 2);
    digestInput.set(voucherStructHash(voucher.channelId, amount), 34);
    const digest = keccak256(digestInput, "bytes");
    key = libsecp256k1.recover(digest, hexToBytes(signature.slice(0, 130) as Hex), recoveryId);
  } catch {
    // r or s out of range: the SDK's verification refuses it, with its reason.
    return undefined;
  }
  if (!key) return undefined;
  return `0x${keccak256(key.subarray(1), "hex").slice(-40)}`;
}

/** The channel a config names (the SDK's computeChannelId, an EIP-712 hash), remembered per config. */
export class ChannelIds {
  readonly #known = new Map<string, string>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  of(config: DecodedConfig, chainId: number): string {
    const key = `${chainId}:${config.payer}:${config.payerAuthorizer}:${config.receiver}:${config.receiverAuthorizer}:${config.token}:${config.withdrawDelay}:${config.salt}`;
    let id = this.#known.get(key);
    if (id === undefined) {
      id = computeChannelId(config as ChannelConfig, chainId).toLowerCase();
      if (this.#known.size >= this.#max) this.#known.delete(this.#known.keys().next().value as string);
      this.#known.set(key, id);
    }
    return id;
  }
}
