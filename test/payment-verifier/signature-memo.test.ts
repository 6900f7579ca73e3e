// payment-verifier remembers recovered signers (mppx recovers each voucher's up to four times per
// call): the memo must answer exactly what the curve answers, and recover each signature once.
import { secp256k1 } from "@noble/curves/secp256k1";
import { keccak256, toHex } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { describe, expect, it } from "vitest";
import {
  memoizeRecovery,
  type Recover,
} from "../../services/payment-verifier/src/adapters/signature-memo.ts";

type Point = ReturnType<InstanceType<typeof secp256k1.Signature>["recoverPublicKey"]>;

function signed(message: string) {
  const key = generatePrivateKey().slice(2);
  const hash = keccak256(toHex(message)).slice(2);
  return { hash, sig: secp256k1.sign(hash, key), publicKey: toHex(secp256k1.getPublicKey(key, false)) };
}

describe("signature recovery memo", () => {
  const original = secp256k1.Signature.prototype.recoverPublicKey as unknown as Recover<Point>;
  let calls = 0;
  const counted: Recover<Point> = function (msgHash) {
    calls++;
    return original.call(this, msgHash);
  };

  it("answers what the curve answers, recovering each signature once", () => {
    const memo = memoizeRecovery(counted, 16);
    calls = 0;
    const a = signed("voucher a");
    const b = signed("voucher b");
    for (let i = 0; i < 4; i++) {
      expect(toHex(memo.call(a.sig, a.hash).toRawBytes(false))).toBe(a.publicKey);
      expect(toHex(memo.call(b.sig, b.hash).toRawBytes(false))).toBe(b.publicKey);
    }
    expect(calls).toBe(2);
    // Another hash with the same signature is another question: a different (wrong) signer.
    const other = keccak256(toHex("voucher c")).slice(2);
    expect(toHex(memo.call(a.sig, other).toRawBytes(false))).not.toBe(a.publicKey);
    expect(calls).toBe(3);
  });

  it("never remembers a failure, and forgets the oldest beyond its size", () => {
    const memo = memoizeRecovery(counted, 2);
    calls = 0;
    const bad = new secp256k1.Signature(1n, 1n); // no recovery bit
    expect(() => memo.call(bad, "00".repeat(32))).toThrow();
    expect(() => memo.call(bad, "00".repeat(32))).toThrow();
    const [a, b, c] = [signed("a"), signed("b"), signed("c")];
    for (const x of [a, b, c, a]) memo.call(x.sig, x.hash);
    expect(calls).toBe(2 + 4);
  });
});
