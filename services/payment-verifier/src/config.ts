// Typed configuration of the payment verifier, read once from the environment.
import { resolve } from "node:path";
import { bindHost, envBool, envInt, envString, readSecret } from "@tollgate/platform";
import { getAddress, isAddress, isHex } from "viem";

export type Address = `0x${string}`;
export type Caip2 = `${string}:${string}`;

/** Where x402 money goes, in which token, on which chain: shared by every x402 scheme. */
export interface X402Config {
  /** Settlement chain, CAIP-2 (`eip155:<chainId>`). */
  network: Caip2;
  /** Token contract (EIP-3009), checksummed. */
  asset: Address;
  /** The token's EIP-712 domain, sent as `extra` so clients can sign. */
  assetName: string;
  assetVersion: string;
  assetSymbol: string;
  assetDecimals: number;
  /** Receiver of every payment, checksummed. */
  payTo: Address;
  maxTimeoutSeconds: number;
  facilitator: FacilitatorConfig;
  /**
   * The settlement chain's RPC, read by the exact scheme itself (smart-wallet signatures, payments
   * whose settlement landed after its answer was lost). The self-hosted facilitator's by default.
   */
  settlementRpcUrl: string | undefined;
  /** How many recent blocks are searched for a used authorization. */
  lookbackBlocks: number;
}

/** The payment schemes this build can offer, by the name used in metrics, events and PAYMENT_SCHEMES. */
export const SCHEME_NAMES = ["exact"] as const;
export type SchemeName = (typeof SCHEME_NAMES)[number];

export interface AttemptLimit {
  perSecond: number;
  burst: number;
}

export type FacilitatorConfig =
  | {
      /** A facilitator service speaking the standard /verify, /settle, /supported API. */
      mode: "remote";
      url: string;
      timeoutMs: number;
    }
  | {
      /** x402Facilitator in-process, submitting settlements with our own key. */
      mode: "local";
      privateKey: `0x${string}`;
      rpcUrl: string;
      /** Bound on a settlement's receipt wait; past it the settle reports settlement_pending. */
      confirmationTimeoutMs: number;
      /** How often a pending transaction's receipt is polled. */
      pollingIntervalMs: number;
      /** Per-RPC-call timeout. */
      rpcTimeoutMs: number;
    };

export interface PaymentVerifierConfig {
  host: string;
  grpcPort: number;
  metricsPort: number;
  redisUrl: string;
  natsUrl: string;
  /** Prefix of every Redis key this service writes (tests use their own). */
  redisPrefix: string;
  /**
   * Redis unreachable at startup: true (embedded default) uses the in-memory single-node
   * store; false (production, several replicas) waits for Redis, so no replica ever
   * serves payments without the shared replay guard.
   */
  redisStandin: boolean;
  /** How long a verified payment stays reserved waiting for Settle or Release. */
  reservationTtlSeconds: number;
  /** Where settlement events wait (on disk) until JetStream acknowledged them: OUTBOX_DIR/payment-verifier. */
  outboxDir: string;
  /** Payment attempts per client address and per payer (0 turns a limit off), and the refusal memory. */
  limits: { perClient: AttemptLimit; perPayer: AttemptLimit; refusalMemorySeconds: number };
  /** The schemes offered, in the order a 402 lists them. */
  schemes: SchemeName[];
  x402: X402Config;
}

/** Base mainnet USDC and its EIP-712 domain. */
export const BASE_USDC: Address = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";

/**
 * The devnet's payTo (anvil dev mnemonic, index 6: a PUBLIC test key). Only a default outside
 * production, so `start` works offline; real money must never be sent to it.
 */
export const DEVNET_PAY_TO: Address = "0x976EA74026E726554dB657fA54763abd0C3a0aa9";

export class ConfigError extends Error {}

function address(name: string, value: string): Address {
  if (!isAddress(value, { strict: false }))
    throw new ConfigError(`${name} must be an address, got "${value}"`);
  return getAddress(value);
}

function caip2(name: string, value: string): Caip2 {
  if (!/^eip155:[1-9][0-9]*$/.test(value)) {
    throw new ConfigError(`${name} must be an EVM CAIP-2 network id like eip155:8453, got "${value}"`);
  }
  return value as Caip2;
}

function facilitatorFromEnv(production: boolean): FacilitatorConfig {
  const url = envString("X402_FACILITATOR_URL", "");
  const privateKey = readSecret("X402_FACILITATOR_PRIVATE_KEY");
  if (url && privateKey) {
    throw new ConfigError(
      "set either X402_FACILITATOR_URL (remote) or X402_FACILITATOR_PRIVATE_KEY (self-hosted)",
    );
  }
  if (url) {
    if (production && !url.startsWith("https://")) {
      throw new ConfigError("X402_FACILITATOR_URL must be https in production");
    }
    return { mode: "remote", url, timeoutMs: envInt("X402_FACILITATOR_TIMEOUT_MS", 10_000) };
  }
  if (privateKey) {
    const key = privateKey.startsWith("0x") ? privateKey : `0x${privateKey}`;
    if (!isHex(key) || key.length !== 66) {
      throw new ConfigError("X402_FACILITATOR_PRIVATE_KEY must be a 32-byte hex private key");
    }
    const rpcUrl = envString("X402_SETTLEMENT_RPC_URL", "");
    if (!rpcUrl)
      throw new ConfigError("X402_SETTLEMENT_RPC_URL is required with X402_FACILITATOR_PRIVATE_KEY");
    return {
      mode: "local",
      privateKey: key,
      rpcUrl,
      confirmationTimeoutMs: envInt("X402_CONFIRMATION_TIMEOUT_MS", 20_000),
      pollingIntervalMs: envInt("X402_RECEIPT_POLL_MS", 250),
      rpcTimeoutMs: envInt("X402_SETTLEMENT_RPC_TIMEOUT_MS", 10_000),
    };
  }
  throw new ConfigError(
    "no x402 facilitator: set X402_FACILITATOR_URL, or X402_FACILITATOR_PRIVATE_KEY with X402_SETTLEMENT_RPC_URL",
  );
}

function schemesFromEnv(): SchemeName[] {
  const names = envString("PAYMENT_SCHEMES", SCHEME_NAMES.join(","))
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const name of names) {
    if (!(SCHEME_NAMES as readonly string[]).includes(name)) {
      throw new ConfigError(`PAYMENT_SCHEMES: unknown scheme "${name}"; known: ${SCHEME_NAMES.join(", ")}`);
    }
  }
  if (names.length === 0) throw new ConfigError("PAYMENT_SCHEMES must name at least one scheme");
  return [...new Set(names)] as SchemeName[];
}

function limitFromEnv(scope: string, perSecond: number, burst: number): AttemptLimit {
  return {
    perSecond: envInt(`PAYMENT_ATTEMPTS_PER_${scope}_PER_SECOND`, perSecond),
    burst: envInt(`PAYMENT_ATTEMPTS_PER_${scope}_BURST`, burst),
  };
}

export function loadConfig(): PaymentVerifierConfig {
  const production = process.env.NODE_ENV === "production";
  const payTo = envString("X402_PAY_TO", "");
  if (!payTo && production) throw new ConfigError("X402_PAY_TO is required in production");
  const maxTimeoutSeconds = envInt("X402_MAX_TIMEOUT_SECONDS", 60);
  const facilitator = facilitatorFromEnv(production);
  // The exact scheme's facilitator refuses authorizations that expire within 6 s.
  if (maxTimeoutSeconds < 10) throw new ConfigError("X402_MAX_TIMEOUT_SECONDS must be at least 10");
  return {
    host: bindHost(),
    grpcPort: envInt("GRPC_PORT", 50052),
    metricsPort: envInt("METRICS_PORT", 9462),
    redisUrl: envString("REDIS_URL", "redis://127.0.0.1:6379"),
    natsUrl: envString("NATS_URL", "nats://127.0.0.1:4222"),
    redisPrefix: envString("PAYMENT_REDIS_PREFIX", "tollgate:payment:"),
    redisStandin: envBool("REDIS_STANDIN", true),
    reservationTtlSeconds: envInt("PAYMENT_RESERVATION_TTL_SECONDS", 120),
    outboxDir: resolve(envString("OUTBOX_DIR", ".tollgate/outbox"), "payment-verifier"),
    limits: {
      perClient: limitFromEnv("CLIENT", 50, 100),
      perPayer: limitFromEnv("PAYER", 50, 100),
      refusalMemorySeconds: envInt("PAYMENT_REFUSAL_MEMORY_SECONDS", 30),
    },
    schemes: schemesFromEnv(),
    x402: {
      network: caip2("X402_NETWORK", envString("X402_NETWORK", "eip155:8453")),
      asset: address("X402_ASSET", envString("X402_ASSET", BASE_USDC)),
      assetName: envString("X402_ASSET_NAME", "USD Coin"),
      assetVersion: envString("X402_ASSET_VERSION", "2"),
      assetSymbol: envString("X402_ASSET_SYMBOL", "USDC"),
      assetDecimals: envInt("X402_ASSET_DECIMALS", 6),
      payTo: payTo ? address("X402_PAY_TO", payTo) : DEVNET_PAY_TO,
      maxTimeoutSeconds,
      facilitator,
      settlementRpcUrl:
        envString("X402_SETTLEMENT_RPC_URL", "") ||
        (facilitator.mode === "local" ? facilitator.rpcUrl : undefined),
      lookbackBlocks: envInt("X402_AUTHORIZATION_LOOKBACK_BLOCKS", 5_000),
    },
  };
}

/** The chain id of an `eip155:<id>` network. */
export function chainIdOf(network: Caip2): number {
  return Number(network.slice("eip155:".length));
}
