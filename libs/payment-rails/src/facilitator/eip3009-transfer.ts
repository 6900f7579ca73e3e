// The `exact` scheme's payment as the token takes it: a plain ECDSA EIP-3009 authorization, its
// transferWithAuthorization calldata, and the token's refusals as the scheme's refusal codes.
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { type ExactEIP3009Payload, eip3009ABI, isEIP3009Payload } from "@x402/evm";
import { type Address, encodeFunctionData, getAddress, type Hex, parseSignature } from "viem";
import { errorText } from "./call-scope.ts";

/** A plain (65-byte ECDSA) EIP-3009 authorization of the exact scheme, as transferWithAuthorization takes it. */
export interface Eip3009Transfer {
  asset: Address;
  from: Address;
  auth: ExactEIP3009Payload["authorization"];
  signature: Hex;
  /** from, to, value, validAfter, validBefore, nonce, v, r, s. */
  args: readonly [Address, Address, bigint, bigint, bigint, Hex, number, Hex, Hex];
}

export function eip3009Transfer(
  payload: PaymentPayload,
  requirements: PaymentRequirements,
): Eip3009Transfer | undefined {
  const inner = payload.payload;
  if (requirements.scheme !== "exact" || !isEIP3009Payload(inner as never)) return undefined;
  const { authorization: auth, signature } = inner as unknown as ExactEIP3009Payload;
  if (signature?.length !== 132) return undefined;
  try {
    const { r, s, v, yParity } = parseSignature(signature as Hex);
    const from = getAddress(auth.from);
    return {
      asset: getAddress(requirements.asset),
      from,
      auth,
      signature: signature as Hex,
      args: [
        from,
        getAddress(auth.to),
        BigInt(auth.value),
        BigInt(auth.validAfter),
        BigInt(auth.validBefore),
        auth.nonce as Hex,
        Number(v ?? yParity),
        r,
        s,
      ],
    };
  } catch {
    return undefined; // not an authorization the contract could take: the library's verdict stands
  }
}

export const transferData = (t: Eip3009Transfer): Hex =>
  encodeFunctionData({ abi: eip3009ABI, functionName: "transferWithAuthorization", args: t.args });

/** What transferWithAuthorization reverts with, as the exact scheme's refusal codes. */
export function transferErrorReason(err: unknown): string {
  const msg = errorText(err);
  if (/authorization.*(expired|valid before)|AuthorizationExpired/i.test(msg))
    return "invalid_exact_evm_payload_authorization_valid_before";
  if (/authorization.*not.*valid|AuthorizationNotYetValid/i.test(msg))
    return "invalid_exact_evm_payload_authorization_valid_after";
  if (/authorization.*used|AuthorizationAlreadyUsed|AuthorizationUsedOrCanceled/i.test(msg))
    return "invalid_exact_evm_nonce_already_used";
  if (/exceeds.*balance|insufficient.*balance|ERC20InsufficientBalance/i.test(msg))
    return "invalid_exact_evm_insufficient_balance";
  if (/invalid.*signature|SignerMismatch|InvalidSignatureV|InvalidSignatureS/i.test(msg))
    return "invalid_exact_evm_signature";
  return "invalid_exact_evm_transaction_failed";
}
