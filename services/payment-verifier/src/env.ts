// payment-verifier's environment, declared once: config.ts reads through it, the README table is
// rendered from it (pnpm gen:env) and the Kubernetes manifests are checked against it (test/k8s).
import {
  mppChainEnv,
  X402_BATCH_TERMS_ENV,
  X402_FACILITATOR_ENV,
  X402_SETTLEMENT_RPC_ENV,
} from "@tollgate/payment-rails";
import {
  DEFAULT_PORTS,
  envTable,
  meshCallerRows,
  NATS_ENV,
  outboxEnv,
  REDIS_ENV,
  serviceEnv,
} from "@tollgate/platform";

/** Where the x402 money goes: read by payment-verifier and (for reconciliation) the settlement worker. */
const X402_CHAIN_ENV = [
  {
    name: "X402_NETWORK",
    default: "eip155:8453",
    description: "settlement chain (CAIP-2); set together with `X402_ASSET` (one alone is refused)",
  },
  {
    name: "X402_ASSET",
    default: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    description: "the token (EIP-3009; default Base USDC); set together with `X402_NETWORK`",
  },
  {
    name: "X402_PAY_TO",
    required: true,
    description: "receiver of every payment; a public development account only with a chain on loopback",
  },
  X402_SETTLEMENT_RPC_ENV,
] as const;

export const ENV = envTable([
  ...serviceEnv(DEFAULT_PORTS["payment-verifier"]),
  ...REDIS_ENV.map((v) =>
    v.name === "REDIS_STANDIN"
      ? {
          ...v,
          description: `${v.description}; on the stand-in x402-batch is not offered (its channels must be in Redis, where the settlement worker claims them; one start-up line says so)`,
        }
      : v,
  ),
  ...NATS_ENV,
  ...outboxEnv("payment-verifier"),
  {
    name: "PAYMENT_RESERVATION_TTL_SECONDS",
    default: "120",
    description:
      "how long a verified payment stays reserved for Settle or Release; must exceed the gateway's upstream deadline",
  },
  {
    name: "PAYMENT_SCHEMES",
    default: "exact,x402-batch,mpp-charge,mpp-session",
    description: "the schemes offered, in the order a 402 lists them",
  },
  {
    name: "PAYMENT_ATTEMPTS_PER_CLIENT_PER_SECOND",
    default: "50",
    description: "payment attempts per client address (0 = off); past it 429 `rate_limited`",
  },
  { name: "PAYMENT_ATTEMPTS_PER_CLIENT_BURST", default: "100", description: "… and their burst" },
  {
    name: "PAYMENT_ATTEMPTS_PER_PAYER_PER_SECOND",
    default: "50",
    description: "the same per payer address",
  },
  { name: "PAYMENT_ATTEMPTS_PER_PAYER_BURST", default: "100", description: "… and their burst" },
  {
    name: "X402_BATCH_REFUND_GAS_PRICE_GWEI",
    default: "0.1",
    description:
      "x402-batch: the gas price a refund's minimum is reckoned at (its 150,000 gas); a refund request below that minimum is refused",
  },
  {
    name: "X402_BATCH_REFUND_ETH_USD",
    default: "5000",
    description:
      "… and the price of ETH in USD it is reckoned at (set it high: the minimum must cover the gas)",
  },
  {
    name: "X402_BATCH_REFUNDS_PER_PAYER_PER_HOUR",
    default: "6",
    description:
      "x402-batch refunds one payer may have sent per hour, across its channels and every replica (0 = no bound); past it 429 `rate_limited`",
  },
  {
    name: "PAYMENT_REFUSAL_MEMORY_SECONDS",
    default: "30",
    description: "how long a refusal that cannot change (a bad signature) is remembered",
  },
  {
    name: "PAYMENT_IDENTIFIER_MAX_ANSWER_BYTES",
    default: "65536",
    description:
      "the largest answer body kept for x402 payment-identifier retries (at least 1); a larger one is not kept, and a retry of its payment is answered as a used payment (402)",
  },
  {
    name: "PAYMENT_IDENTIFIER_TTL_SECONDS",
    description:
      "how long the first answer of an x402 payment carrying a payment identifier is kept for a retry (default: `X402_MAX_TIMEOUT_SECONDS`, the validity window a payment is signed for)",
  },
  ...X402_CHAIN_ENV,
  { name: "X402_ASSET_NAME", default: "USD Coin", description: "the token's EIP-712 domain name (`extra`)" },
  { name: "X402_ASSET_VERSION", default: "2", description: "the token's EIP-712 domain version (`extra`)" },
  { name: "X402_ASSET_SYMBOL", default: "USDC", description: "the token's symbol" },
  { name: "X402_ASSET_DECIMALS", default: "6", description: "the token's decimals" },
  {
    name: "X402_MAX_TIMEOUT_SECONDS",
    default: "60",
    description: "validity window an x402 offer grants (at least 10)",
  },
  ...X402_FACILITATOR_ENV,
  {
    name: "X402_AUTHORIZATION_LOOKBACK_BLOCKS",
    default: "5000",
    description: "how many recent blocks are searched for a used authorization",
  },
  ...X402_BATCH_TERMS_ENV,
  {
    name: "MPP_SECRET_KEY",
    required: "with an MPP scheme",
    secret: true,
    description:
      "the HMAC key of every challenge id, ≥ 32 bytes, the same on every replica (`pnpm start` generates `.tollgate/mpp-secret-key`)",
  },
  ...mppChainEnv({ rpc: "with an MPP scheme", key: "with mpp-session" }),
  {
    name: "MPP_PAY_TO",
    description:
      "receiver of charges, payee of session channels (unset: `X402_PAY_TO`); a public development account only with the chain on loopback",
  },
  {
    name: "MPP_REALM",
    default: "tollgate",
    description: "the challenges' realm (bound into each charge's memo)",
  },
  {
    name: "MPP_SESSION_SUGGESTED_DEPOSIT",
    default: "1",
    description: "the deposit (USDC.e) the session offer suggests",
  },
  ...meshCallerRows(["gateway"]),
]);
