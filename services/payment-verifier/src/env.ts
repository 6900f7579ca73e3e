// payment-verifier's environment, declared once: config.ts reads through it, the README table is
// rendered from it (pnpm gen:env) and the Kubernetes manifests are checked against it (test/k8s).
import {
  type EnvVar,
  envTable,
  meshCallerRows,
  NATS_ENV,
  outboxEnv,
  REDIS_ENV,
  serviceEnv,
} from "@tollgate/platform";

/**
 * The Tempo side of MPP: read by payment-verifier and by the settlement worker (session channels),
 * each saying when the chain and the operator key are required.
 */
export function mppChainEnv(required: { rpc: string; key?: string }) {
  return [
    {
      name: "MPP_TEMPO_RPC_URL" as const,
      required: required.rpc,
      secret: true,
      description:
        "the Tempo chain's JSON-RPC, https (http only on loopback); on the devnet, the shim in front of anvil",
    },
    {
      name: "MPP_CHAIN_ID" as const,
      default: "4217",
      description: "the Tempo chain (4217: mainnet); every offer names it",
    },
    {
      name: "MPP_SERVER_PRIVATE_KEY" as const,
      ...(required.key ? { required: required.key } : {}),
      secret: true,
      description:
        "the server's Tempo account: operator of every session channel (payment-verifier closes them, the settlement worker settles them; set there, it settles them), pays those fees",
    },
    ...MPP_CHAIN_SETTINGS,
  ] satisfies EnvVar[];
}

const MPP_CHAIN_SETTINGS = [
  {
    name: "MPP_FEE_TOKEN",
    default: "0x20C0000000000000000000000000000000000000",
    description: "the token the server's own transactions pay fees in (pathUSD)",
  },
  {
    name: "MPP_CHANNEL_RESERVE",
    default: "0x4d50500000000000000000000000000000000000",
    description: "the TIP-1034 channel reserve (precompile address)",
  },
  {
    name: "MPP_SESSION_SETTLE_MIN_AMOUNT",
    default: "1",
    description: "a session channel is settled once this much (USDC.e) is unsettled…",
  },
  {
    name: "MPP_SESSION_SETTLE_INTERVAL_SECONDS",
    default: "3600",
    description: "… or its oldest unsettled charge is this old",
  },
  {
    name: "MPP_SESSION_SETTLE_TICK_SECONDS",
    default: "10",
    description: "how often the settlement loop looks for due channels",
  },
] as const;

/** Reads the MPP chain settings (names and defaults; whether they are required is checked by the reader). */
export const MPP_ENV = envTable(mppChainEnv({ rpc: "with MPP" }));

/** Where the x402 money goes: read by payment-verifier and (for reconciliation) the settlement worker. */
export const X402_CHAIN_ENV = [
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
  {
    name: "X402_SETTLEMENT_RPC_URL",
    required: "with X402_FACILITATOR_PRIVATE_KEY",
    secret: true,
    description:
      "the settlement chain's JSON-RPC; with a remote facilitator optional: lets the exact scheme check smart-wallet payers and find settlements that landed late",
  },
] as const;

/** The x402 facilitator (remote or self-hosted): payment-verifier settles through it, the settlement worker claims x402-batch channels through it. */
export const X402_FACILITATOR_ENV = [
  {
    name: "X402_FACILITATOR_URL",
    secret: true,
    description:
      "remote facilitator (/verify, /settle, /supported); https (http only on loopback), no user:password. Exactly one of this and `X402_FACILITATOR_PRIVATE_KEY`",
  },
  {
    name: "X402_FACILITATOR_TIMEOUT_MS",
    default: "10000",
    description: "timeout of a remote facilitator call",
  },
  {
    name: "X402_FACILITATOR_PRIVATE_KEY",
    secret: true,
    description:
      "self-hosted facilitator: settles with this key (every replica and the settlement worker may hold it: sends are serialised through the Redis signer lock)",
  },
  {
    name: "X402_CONFIRMATION_TIMEOUT_MS",
    default: "20000",
    description: "self-hosted: receipt wait; then `settlement_pending`",
  },
  { name: "X402_RECEIPT_POLL_MS", default: "250", description: "self-hosted: how often a receipt is polled" },
  {
    name: "X402_SETTLEMENT_RPC_TIMEOUT_MS",
    default: "10000",
    description: "self-hosted: timeout of one settlement-chain RPC call",
  },
] as const satisfies readonly EnvVar[];

/** x402-batch's channel terms and authorizer key: read by payment-verifier and the settlement worker alike. */
export const X402_BATCH_TERMS_ENV = [
  {
    name: "X402_BATCH_AUTHORIZER_PRIVATE_KEY",
    required: "with x402-batch",
    secret: true,
    description:
      "the receiver-authorizer key x402-batch signs claims and refunds with (the settlement worker's too)",
  },
  {
    name: "X402_BATCH_MIN_DEPOSIT",
    default: "1000000",
    description: "the minimum channel deposit x402-batch offers announce (atomic units)",
  },
  {
    name: "X402_BATCH_WITHDRAW_DELAY_SECONDS",
    default: "86400",
    description: "how long a payer waits to withdraw unilaterally (900 to 2592000)",
  },
] as const satisfies readonly EnvVar[];

export const ENV = envTable([
  ...serviceEnv({ grpc: 50052, metrics: 9462 }),
  ...REDIS_ENV.map((v) =>
    v.name === "REDIS_STANDIN"
      ? {
          ...v,
          description: `${v.description}; on the stand-in x402-batch is not offered (its channels must be in Redis, where the settlement worker claims them; one start-up line says so)`,
        }
      : v,
  ),
  ...NATS_ENV.filter((v) => v.name !== "NATS_STREAM_REPLICAS"),
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
    name: "PAYMENT_REFUSAL_MEMORY_SECONDS",
    default: "30",
    description: "how long a refusal that cannot change (a bad signature) is remembered",
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
