// The environment variables of the payment rails, declared once: each service that uses a rail
// puts these rows in its own table (its README table and Kubernetes check follow from it), and the
// readers in config.ts read through them.
import { type EnvVar, envTable } from "@tollgate/platform";

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

/** The settlement chain's JSON-RPC: the self-hosted facilitator settles through it. */
export const X402_SETTLEMENT_RPC_ENV = {
  name: "X402_SETTLEMENT_RPC_URL",
  required: "with X402_FACILITATOR_PRIVATE_KEY",
  secret: true,
  description:
    "the settlement chain's JSON-RPC; with a remote facilitator optional: lets the exact scheme check smart-wallet payers and find settlements that landed late",
} as const satisfies EnvVar;

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

/**
 * What the readers in config.ts read (names and defaults; whether a variable is required is
 * checked by the reader): the same rows as in every service's table.
 */
export const RAILS_ENV = envTable([
  ...X402_FACILITATOR_ENV,
  X402_SETTLEMENT_RPC_ENV,
  ...X402_BATCH_TERMS_ENV,
  ...mppChainEnv({ rpc: "with MPP" }),
]);
