// mppx recovers a session voucher's signer four times per call (its signer is extracted, then
// verified, once when the credential is checked and again when it is accepted) and a charge
// transaction's signer twice; each recovery is pure-JS curve math (1-3 ms here), the largest CPU
// cost in payment-verifier. Recovery is a pure function of (hash, r, s, recovery bit), so the
// answers of the last few thousand signatures are kept: the first recovery of a call pays, the
// repeats are a map lookup; and the first is libsecp256k1's (libs/payment-rails: secp256k1.ts), a small fraction of
// the pure-JS cost. One patch at start-up of the one copy of @noble/curves that viem, ox and mppx
// share (pinned to the same version in package.json).
import { secp256k1 } from "@noble/curves/secp256k1";
import { fastRecovery, type Recover } from "@tollgate/payment-rails";

/** `recover` remembering up to `size` answers (oldest out first); a throw is never remembered. */
export function memoizeRecovery<P>(recover: Recover<P>, size: number): Recover<P> {
  const memo = new Map<string, P>();
  return function recoverPublicKey(msgHash) {
    const hash = typeof msgHash === "string" ? msgHash.toLowerCase() : Buffer.from(msgHash).toString("hex");
    const key = `${hash}:${this.r.toString(16)}:${this.s.toString(16)}:${this.recovery}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    const point = recover.call(this, msgHash);
    if (memo.size >= size) memo.delete(memo.keys().next().value as string);
    memo.set(key, point);
    return point;
  };
}

const INSTALLED = Symbol.for("tollgate.secp256k1.recoverMemo");

/** Installs the memo on the shared secp256k1 Signature class; idempotent. */
export function memoizeSignatureRecovery(size = 4_096): void {
  const proto = secp256k1.Signature.prototype as unknown as Record<PropertyKey, unknown> & {
    recoverPublicKey: Recover<unknown>;
  };
  if (proto[INSTALLED]) return;
  proto.recoverPublicKey = memoizeRecovery(fastRecovery(proto.recoverPublicKey as never), size);
  proto[INSTALLED] = true;
}
