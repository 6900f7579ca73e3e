// secp256k1 on libsecp256k1 (compiled to WebAssembly, tiny-secp256k1) for the two curve operations
// of every paid call: the payer's signer recovered at Verify (inside the x402 library and mppx,
// which use @noble/curves, pure JS: 1-3 ms of CPU each) and the settlement transaction signed at
// Settle. The answers are the curve's own; anything the fast path does not take (a recovery bit
// above 1, a hash of another length, an input it refuses) goes to @noble/curves as before, so every
// error is the one it always was.
import { secp256k1 } from "@noble/curves/secp256k1";
import { recover, signRecoverable } from "tiny-secp256k1";
import {
  type Hex,
  hexToBytes,
  keccak256,
  serializeTransaction,
  type TransactionSerializable,
  toHex,
} from "viem";
import type { Recover } from "./signature-memo.ts";

type Point = ReturnType<InstanceType<typeof secp256k1.Signature>["recoverPublicKey"]>;

const N_BYTES = 32;

function scalarBytes(n: bigint, into: Uint8Array, offset: number): boolean {
  if (n <= 0n || n >= secp256k1.CURVE.n) return false;
  const hex = n.toString(16).padStart(64, "0");
  into.set(Buffer.from(hex, "hex"), offset);
  return true;
}

/** `recover` answered by libsecp256k1 where it can, else by `fallback` (the curve's own). */
export function wasmRecovery(fallback: Recover<Point>): Recover<Point> {
  return function recoverPublicKey(msgHash) {
    const hash = typeof msgHash === "string" ? Buffer.from(msgHash, "hex") : msgHash;
    const recovery = this.recovery;
    if (hash.length === N_BYTES && (recovery === 0 || recovery === 1)) {
      const signature = new Uint8Array(64);
      if (scalarBytes(this.r, signature, 0) && scalarBytes(this.s, signature, 32)) {
        try {
          const publicKey = recover(hash, signature, recovery, false);
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
export function signTransactionWasm(transaction: TransactionSerializable, privateKey: Uint8Array): Hex {
  const hash = hexToBytes(keccak256(serializeTransaction(transaction)));
  const { signature, recoveryId } = signRecoverable(hash, privateKey);
  return serializeTransaction(transaction, {
    r: toHex(signature.subarray(0, 32)),
    s: toHex(signature.subarray(32, 64)),
    yParity: recoveryId,
  });
}
