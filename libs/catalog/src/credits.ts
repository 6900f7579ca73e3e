// Prepaid credits (issue 31), stated once: where they are bought, the amounts offered, and how a
// balance is written. The gateway's routes and docs, quota-meter's messages and the dashboard read
// them from here.

/** Buying credits: POST here with `?amount=` one of CREDIT_TOP_UPS (USDC); the 402 offers it. */
export const CREDITS_PATH = "/api/credits";

/** The top-up amounts offered, in USDC (the first is the default). */
export const CREDIT_TOP_UPS = ["1", "5", "20"] as const;
export type CreditTopUp = (typeof CREDIT_TOP_UPS)[number];

export function isCreditTopUp(s: string): s is CreditTopUp {
  return (CREDIT_TOP_UPS as readonly string[]).includes(s);
}

/** Atomic units (USDC: 6 decimals) as a decimal string without trailing zeros: 1500000 → "1.5". */
export function usdcOfAtomic(atomic: number | bigint): string {
  const v = BigInt(atomic);
  const sign = v < 0n ? "-" : "";
  const abs = v < 0n ? -v : v;
  const whole = abs / 1_000_000n;
  const frac = (abs % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  return `${sign}${whole}${frac ? `.${frac}` : ""}`;
}

/** How a caller whose plan is spent (or who has no account) gets more, in one sentence. */
export const TOP_UP_HINT = `top up prepaid credits with POST ${CREDITS_PATH}?amount=${CREDIT_TOP_UPS.join("|")} (x402 or MPP)`;
