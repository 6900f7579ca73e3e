// Prepaid credits (issue 31), stated once: where they are bought, the amounts offered, and how a
// balance is written. The gateway's routes and docs, quota-meter's messages and the dashboard read
// them from here.
import { z } from "zod";
import type { Endpoint } from "./endpoint-shape.ts";

/** Buying credits: POST here with `?amount=` one of CREDIT_TOP_UPS (USDC); the 402 offers it. */
export const CREDITS_PATH = "/api/credits";

/**
 * Where a top-up names its API key when `Authorization` carries an MPP credential (which takes that
 * header); `Authorization: Bearer` works with x402 or no payment.
 */
export const TOP_UP_KEY_HEADER = "X-Api-Key";

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
export const TOP_UP_HINT = `top up prepaid credits with POST ${CREDITS_PATH}?amount=${CREDIT_TOP_UPS.join("|")}`;

/**
 * The payment schemes a top-up is paid with (payment-verifier's names): one transfer that settles
 * at once. Channels (x402-batch, MPP session) are for per-call payments: their vouchers settle
 * later, and a credit must have a settled payment behind it.
 */
const TOP_UP_SCHEMES = ["exact", "mpp-charge"] as const;

const usdc = z
  .string()
  .regex(/^[0-9]+(\.[0-9]{1,6})?$/)
  .meta({ description: "USDC, decimal (6 decimals at most)." });

/** The answer to a top-up that settled: 200 (credited) or 202 (credit pending, see CREDITS_ENDPOINT). */
const topUpData = z.object({
  credit: z.enum(["credited", "pending"]).meta({
    description:
      "`credited` (200): the balance below includes this top-up. `pending` (202): the payment settled (the receipt is in the headers) and the credit is applied from the settlement ledger within a minute, once.",
  }),
  account_id: z
    .string()
    .nullable()
    .meta({ description: "The account credited; null while pending for a wallet's account." }),
  credited_usdc: usdc,
  balance_usdc: usdc
    .nullable()
    .meta({ description: "The account's balance after the top-up; null while pending." }),
  account_created: z.boolean().meta({
    description:
      "The paying wallet had no account: this top-up made one, credits only (no plan volume; a dashboard sign-up moves it to the free plan).",
  }),
});

const topUpQuery = z.strictObject({
  amount: z
    .enum(CREDIT_TOP_UPS, { error: `expected one of ${CREDIT_TOP_UPS.join(", ")} (USDC)` })
    .default(CREDIT_TOP_UPS[0])
    .meta({
      description: `The top-up, in USDC: one of ${CREDIT_TOP_UPS.join(", ")}. Default ${CREDIT_TOP_UPS[0]}.`,
    }),
});

/**
 * POST /api/credits as the gateway routes, validates and documents it. Its price depends on
 * `amount`: each amount is a priced product of its own (TOP_UP_PRODUCTS), the one offered and
 * charged.
 */
export const CREDITS_ENDPOINT = {
  id: "credits",
  method: "POST",
  path: CREDITS_PATH,
  price: CREDIT_TOP_UPS[0],
  summary: "Buy prepaid credits",
  description: `Answers 402 with offers for \`amount\` USDC (x402 \`exact\`, MPP \`charge\`); paid, the settled amount is credited to the account bound to the paying wallet (made when new, credits only: a dashboard sign-up gives the free plan) or, with an API key (\`Authorization: Bearer\`, or \`X-Api-Key\` beside an MPP credential), to that key's account. API-key calls draw their price from the credits once the plan's windows are spent. No node call.`,
  networks: [],
  params: { query: topUpQuery },
  data: topUpData,
  upstream: "none (the payment is settled and credited; no node call)",
  example: { query: { amount: CREDIT_TOP_UPS[0] } },
  errors: [],
  payWith: TOP_UP_SCHEMES,
  topUp: true,
} as const satisfies Endpoint;

/** The name payment-verifier prices a top-up of `amount` USDC by (Resource.endpoint). */
export function topUpResource(amount: CreditTopUp): string {
  return `${CREDITS_PATH}?amount=${amount}`;
}

/** One priced product per top-up amount: CREDITS_ENDPOINT at that price, named by topUpResource. */
export const TOP_UP_PRODUCTS: readonly Endpoint[] = CREDIT_TOP_UPS.map((amount) => ({
  ...CREDITS_ENDPOINT,
  id: `credits-${amount}`,
  path: topUpResource(amount),
  price: amount,
  summary: `${amount} USDC of prepaid credits`,
}));
