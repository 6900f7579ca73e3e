// secp256k1 on libsecp256k1 for the curve operations of every paid call: the payer's signer
// recovered at Verify (inside the x402 library and mppx, which use @noble/curves, pure JS: 1-3 ms
// of CPU each, and for x402-batch vouchers directly) and the settlement transaction signed at
// Settle. libsecp256k1 runs natively (the `secp256k1` package's N-API binding, prebuilt for
// linux-x64, darwin-arm64 and win32-x64: about 70 µs a recovery here) or, where no prebuild fits,
// compiled to WebAssembly (tiny-secp256k1: about 350 µs). The answers are the curve's own; anything
// neither takes (a recovery bit above 1, a hash of another length, an input it refuses) goes to
// @noble/curves as before, so every error is the one it always was.
import { secp256k1 } from "@noble/curves/secp256k1";
import {
  type Hex,
  hexToBytes,
  keccak256,
  serializeTransaction,
  type TransactionSerializable,
  toHex,
} from "viem";

interface RecoverableSignature {
  r: bigint;
  s: bigint;
  recovery?: number;
}
/** A signature's `recoverPublicKey`, as @noble/curves calls it (payment-verifier memoizes it). */
export type Recover<P> = (this: RecoverableSignature, msgHash: string | Uint8Array) => P;

/** libsecp256k1's two operations, as either build answers them. */
export interface Libsecp256k1 {
  name: "native" | "webassembly";
  /** The uncompressed public key (65 bytes) that signed `hash`; throws or answers null when there is none. */
  recover(hash: Uint8Array, signature: Uint8Array, recoveryId: 0 | 1): Uint8Array | null;
  /** RFC 6979, low s. */
  sign(hash: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recoveryId: number };
}

/**
 * The WebAssembly build, instantiated only when asked for: where the native one loads, its module and
 * memory (about 10 MB resident) would sit unused in every process that signs or recovers.
 */
export async function loadWebAssembly(): Promise<Libsecp256k1> {
  const tiny = await import("tiny-secp256k1");
  return {
    name: "webassembly",
    recover: (hash, signature, recoveryId) => tiny.recover(hash, signature, recoveryId, false),
    sign: (hash, privateKey) => tiny.signRecoverable(hash, privateKey),
  };
}

/** The native build, or undefined where its prebuilt binary does not load (then WebAssembly). */
export const native: Libsecp256k1 | undefined = await import("secp256k1/bindings.js").then(
  ({ default: binding }): Libsecp256k1 => {
    return {
      name: "native",
      recover: (hash, signature, recoveryId) => binding.ecdsaRecover(signature, recoveryId, hash, false),
      sign: (hash, privateKey) => {
        const { signature, recid } = binding.ecdsaSign(hash, privateKey);
        return { signature, recoveryId: recid };
      },
    };
  },
  () => undefined,
);

export const libsecp256k1: Libsecp256k1 = native ?? (await loadWebAssembly());

type Point = ReturnType<InstanceType<typeof secp256k1.Signature>["recoverPublicKey"]>;

const N_BYTES = 32;

function scalarBytes(n: bigint, into: Uint8Array, offset: number): boolean {
  if (n <= 0n || n >= secp256k1.CURVE.n) return false;
  const hex = n.toString(16).padStart(64, "0");
  into.set(Buffer.from(hex, "hex"), offset);
  return true;
}

/** `recover` answered by libsecp256k1 where it can, else by `fallback` (the curve's own). */
export function fastRecovery(fallback: Recover<Point>, lib: Libsecp256k1 = libsecp256k1): Recover<Point> {
  return function recoverPublicKey(msgHash) {
    const hash = typeof msgHash === "string" ? Buffer.from(msgHash, "hex") : msgHash;
    const recovery = this.recovery;
    if (hash.length === N_BYTES && (recovery === 0 || recovery === 1)) {
      const signature = new Uint8Array(64);
      if (scalarBytes(this.r, signature, 0) && scalarBytes(this.s, signature, 32)) {
        try {
          const publicKey = lib.recover(hash, signature, recovery);
          if (publicKey) return secp256k1.ProjectivePoint.fromHex(publicKey);
        } catch {
          // refused by libsecp256k1: the curve's own answer (or error) below
        }
      }
    }
    return fallback.call(this, msgHash);
  };
}

/** A signed, serialized transaction: RFC 6979 and low-s, as viem's own signer makes it. */
export function signTransaction(
  transaction: TransactionSerializable,
  privateKey: Uint8Array,
  lib: Libsecp256k1 = libsecp256k1,
): Hex {
  const hash = hexToBytes(keccak256(serializeTransaction(transaction)));
  const { signature, recoveryId } = lib.sign(hash, privateKey);
  return serializeTransaction(transaction, {
    r: toHex(signature.subarray(0, 32)),
    s: toHex(signature.subarray(32, 64)),
    yParity: recoveryId,
  });
}
