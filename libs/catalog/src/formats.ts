import { ens_normalize } from "@adraffy/ens-normalize";
import { z } from "zod";

/**
 * The value formats of spec 2.2, each written once. Every message names the expected
 * format, and the gateway prefixes the parameter name, so a 400 reads like
 * `contract: expected an address (0x followed by 40 hex characters)`.
 */

const ADDRESS = /^0x[a-fA-F0-9]{40}$/;

/**
 * An address parameter: any casing spec 2.2 allows (lower, upper, mixed, a wrong EIP-55
 * checksum included) is valid and is served as its lower-case form, so no library call
 * downstream (viem checks checksums) ever sees a casing it could refuse.
 */
export const address = z
  .string()
  .regex(ADDRESS, { error: "expected an address (0x followed by 40 hex characters)" })
  .transform((v) => v.toLowerCase())
  .meta({ example: "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045" });

/** An address in an answer: always lower-case (the one casing the API echoes; see README). */
export const addressOut = z
  .string()
  .regex(/^0x[a-f0-9]{40}$/)
  .meta({ description: "Address, lower-case hex." });

export const hash32 = z
  .string()
  .regex(/^0x[a-fA-F0-9]{64}$/, { error: "expected a 32-byte hash (0x followed by 64 hex characters)" });

/** Hex quantity as returned by the node (block numbers, gas, timestamps, chain id). */
/** A JSON-RPC quantity's form (also tested directly where a zod parse per call is too dear). */
export const QUANTITY = /^0x[a-fA-F0-9]+$/;
export const quantity = z.string().regex(QUANTITY);

/** Arbitrary hex data (bytecode, calldata, ABI-encoded results). */
export const hexData = z.string().regex(/^0x([a-fA-F0-9]{2})*$/, {
  error: "expected hex data (0x followed by an even number of hex characters)",
});

/** msg.value in wei, hex. At most 256 bits. */
export const weiHex = z.string().regex(/^0x[a-fA-F0-9]{1,64}$/, {
  error: "expected a hex quantity in wei (0x followed by 1 to 64 hex digits)",
});

export const BLOCK_TAGS = ["latest", "pending", "earliest", "safe", "finalized"] as const;

const MAX_BLOCK = 2n ** 63n - 1n;
const BLOCK_SELECTOR_ERROR =
  "expected a block selector: a decimal block number, a 0x hex block number, or one of latest, pending, earliest, safe, finalized";

/**
 * Block selector: a decimal integer, a tag, or a hex number. It is normalised to what
 * JSON-RPC takes (a tag or a hex quantity), so the node never sees the decimal form.
 */
export const blockSelector = z
  .string()
  .superRefine((value, ctx) => {
    if ((BLOCK_TAGS as readonly string[]).includes(value)) return;
    const decimal = /^[0-9]{1,20}$/.test(value);
    const hex = /^0x[a-fA-F0-9]{1,16}$/.test(value);
    if (!decimal && !hex) {
      ctx.addIssue({ code: "custom", message: BLOCK_SELECTOR_ERROR });
      return;
    }
    if (BigInt(value) > MAX_BLOCK) ctx.addIssue({ code: "custom", message: "block number is too large" });
  })
  .transform((value): string =>
    (BLOCK_TAGS as readonly string[]).includes(value) ? value : `0x${BigInt(value).toString(16)}`,
  )
  .meta({ description: BLOCK_SELECTOR_ERROR.replace("expected a block selector: ", "Block selector: ") });

/** token_id: a decimal digit string, at most uint256. */
export const tokenId = z
  .string()
  // abort: the bound check below must never see a non-digit string (BigInt would throw).
  .regex(/^[0-9]{1,78}$/, { error: "expected a token id (decimal digits)", abort: true })
  .refine((v) => BigInt(v) < 2n ** 256n, { error: "token id exceeds uint256" });

/** Raw integer amounts (token balances) as decimal strings. */
export const decimalAmount = z.string().regex(/^[0-9]+$/);

function isEnsName(value: string): boolean {
  if (!/^[^\s/?#]+\.eth$/i.test(value)) return false;
  try {
    // ENSIP-15, the normaliser viem uses: a name it refuses can never resolve.
    ens_normalize(value);
    return true;
  } catch {
    return false;
  }
}

/** ENS input: an address (reverse lookup) or a normalisable name ending in .eth (forward lookup). */
export const ensInput = z
  .string()
  .max(255)
  .refine((v) => ADDRESS.test(v) || isEnsName(v), {
    error: "expected an address (reverse lookup) or a valid ENS name ending in .eth (forward lookup)",
  })
  // An address is served as its lower-case form, like every address parameter.
  .transform((v) => (ADDRESS.test(v) ? v.toLowerCase() : v));

/** Integer given as a query string, with bounds in the message. */
export function queryInt(min: number, max: number, fallback: number) {
  const message = `expected an integer from ${min} to ${max}`;
  return z
    .string()
    .regex(/^[0-9]{1,7}$/, { error: message })
    .transform(Number)
    .pipe(z.number().int().min(min, { error: message }).max(max, { error: message }))
    .optional()
    .transform((v) => v ?? fallback)
    .meta({ description: `Integer, ${min} to ${max}, default ${fallback}.` });
}
