// payment-verifier remembers recovered signers (mppx recovers each voucher's up to four times per
// call): the memo must answer exactly what the curve answers, and recover each signature once. The
// first recovery, and the settlement transaction's signature, are libsecp256k1's (native, else
// WebAssembly): the same answers.
import { secp256k1 } from "@noble/curves/secp256k1";
import { hexToBytes, keccak256, recoverTransactionAddress, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import {
  fastRecovery,
  type Libsecp256k1,
  libsecp256k1,
  loadWebAssembly,
  native,
  type Recover,
  signTransaction,
} from "../../libs/payment-rails/src/secp256k1.ts";
import { memoizeRecovery } from "../../services/payment-verifier/src/adapters/signature-memo.ts";

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

it("runs libsecp256k1 natively on this machine (its prebuilt binary loads)", () => {
  expect(native).toBeDefined();
  expect(libsecp256k1.name).toBe("native");
});

// One contract for both builds of libsecp256k1: whichever a machine loads answers as the curve does.
const builds: Libsecp256k1[] = [await loadWebAssembly(), ...(native ? [native] : [])];
describe.each(builds.map((lib) => ({ lib, name: lib.name })))(
  "secp256k1 on libsecp256k1 ($name)",
  ({ lib }) => {
    const original = secp256k1.Signature.prototype.recoverPublicKey as unknown as Recover<Point>;
    let fallbacks = 0;
    const curve: Recover<Point> = function (msgHash) {
      fallbacks++;
      return original.call(this, msgHash);
    };
    const fast = fastRecovery(curve, lib);

    it("recovers exactly the signer the curve recovers, without asking the curve", () => {
      fallbacks = 0;
      for (let i = 0; i < 50; i++) {
        const s = signed(`message ${i}`);
        expect(toHex(fast.call(s.sig, s.hash).toRawBytes(false))).toBe(s.publicKey);
        // A flipped recovery bit names another key, the same one the curve names.
        const flipped = s.sig.addRecoveryBit(1 - (s.sig.recovery ?? 0));
        expect(toHex(fast.call(flipped, s.hash).toRawBytes(false))).toBe(
          toHex(original.call(flipped, s.hash).toRawBytes(false)),
        );
      }
      expect(fallbacks).toBe(0);
    });

    it("leaves to the curve what it does not take, with the curve's own answer or error", () => {
      fallbacks = 0;
      const s = signed("m");
      const noBit = new secp256k1.Signature(s.sig.r, s.sig.s);
      expect(() => fast.call(noBit, s.hash)).toThrow();
      const bitTwo = s.sig.addRecoveryBit(2);
      expect(() => fast.call(bitTwo, s.hash)).toThrow();
      const shortHash = s.hash.slice(0, 40); // 20 bytes: not a hash libsecp256k1 takes
      expect(toHex(fast.call(s.sig, shortHash).toRawBytes(false))).toBe(
        toHex(original.call(s.sig, shortHash).toRawBytes(false)),
      );
      expect(fallbacks).toBe(3);
    });

    it("signs a transaction byte for byte as viem's own signer does (RFC 6979, low s)", async () => {
      const key = generatePrivateKey();
      const account = privateKeyToAccount(key);
      for (let nonce = 0; nonce < 20; nonce++) {
        const tx = {
          type: "eip1559" as const,
          chainId: 84532,
          to: account.address,
          data: keccak256(toHex(`call ${nonce}`)),
          nonce,
          gas: 60_000n,
          maxFeePerGas: 2_000_000_000n,
          maxPriorityFeePerGas: 1_000_000n,
        };
        const signedTx = signTransaction(tx, hexToBytes(key), lib);
        expect(signedTx).toBe(await account.signTransaction(tx));
        expect(await recoverTransactionAddress({ serializedTransaction: signedTx as never })).toBe(
          account.address,
        );
      }
    });
  },
);
