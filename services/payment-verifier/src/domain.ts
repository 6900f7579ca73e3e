// payment-verifier's fixed facts, the same in every deployment: the schemes this build can offer,
// the currencies MPP accepts, and the bounds its settings must keep. config.ts reads the rest from
// the environment.
import type { Address } from "@tollgate/payment-rails";

/** The payment schemes this build can offer, by the name used in metrics, events and PAYMENT_SCHEMES. */
export const SCHEME_NAMES = ["exact", "x402-batch", "mpp-charge", "mpp-session"] as const;
export type SchemeName = (typeof SCHEME_NAMES)[number];

/** The two stablecoins MPP charges accept (spec 1.4), TIP-20 tokens with 6 decimals; sessions take USDC.e. */
export const MPP_CURRENCIES = {
  pathUsd: { address: "0x20C0000000000000000000000000000000000000", symbol: "pathUSD" },
  usdce: { address: "0x20C000000000000000000000b9537d11c60E8b50", symbol: "USDC.e" },
} as const satisfies Record<string, { address: Address; symbol: string }>;

/**
 * The shortest validity window an x402 offer may grant (X402_MAX_TIMEOUT_SECONDS): the exact
 * scheme's facilitator refuses authorizations that expire within 6 s.
 */
export const MIN_OFFER_TIMEOUT_SECONDS = 10;
