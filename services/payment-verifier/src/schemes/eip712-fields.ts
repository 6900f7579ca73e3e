// The payload fields of the EVM schemes, as strict as the EIP-712 hashing and ABI encoding that read
// them (viem's), so no value that passed here fails there: that was a 503, not a refusal. The
// patterns abort: zod runs a refinement past a failed check otherwise (BigInt("\0") throws).
import { isAddress } from "viem";
import { z } from "zod";

export const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, { message: "expected a 20-byte hex address", abort: true })
  .refine((a) => isAddress(a), "expected an address in lowercase or with its EIP-55 checksum");
export const hex32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "expected a 32-byte hex value");
export const signatureHex = z.string().regex(/^0x[0-9a-fA-F]{2,4096}$/, "expected a hex signature");
const UINT256_LIMIT = 2n ** 256n;
export const uint256 = z
  .string()
  .regex(/^[0-9]{1,78}$/, { message: "expected a decimal integer string", abort: true })
  .refine((v) => BigInt(v) < UINT256_LIMIT, "expected an integer below 2^256");
