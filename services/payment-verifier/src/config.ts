// Typed configuration of the payment verifier, read once from the environment (env.ts); the fixed
// facts it is checked against are in domain.ts, the payment rails' own settings in libs/payment-rails.
import { resolve } from "node:path";
import {
  type Address,
  type Caip2,
  decimalAmount,
  type FacilitatorConfig,
  facilitatorFromEnv,
  isLoopback,
  type MppChainConfig,
  mppChainFromEnv,
  parseAddress,
  paymentRedisPrefix,
  publicDevAccounts,
  type X402BatchConfig,
  x402BatchFromEnv,
} from "@tollgate/payment-rails";
import { ConfigError, type MeshCallers, readMeshCallers, readRedisSettings } from "@tollgate/platform";
import { MIN_OFFER_TIMEOUT_SECONDS, SCHEME_NAMES, type SchemeName } from "./domain.ts";
import { ENV } from "./env.ts";

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
  /** Set when x402-batch is offered. */
  batch: X402BatchConfig | undefined;
  /** What an x402-batch refund request must meet (stores/batch-refunds.ts applies it). */
  batchRefunds: {
    /** The smallest refund sent, atomic units: a refund's gas at the configured gas price. */
    minimum: string;
    /** Refunds one payer may have sent per hour, across replicas (0 = no bound). */
    perPayerPerHour: number;
  };
}

/**
 * The gas one cooperative refund may use: claim and refund in one transaction (139,020 measured on
 * the escrow, a refund alone about 67,000), with a margin.
 */
const REFUND_GAS = 150_000n;

/**
 * The minimum refund: REFUND_GAS at X402_BATCH_REFUND_GAS_PRICE_GWEI, priced at
 * X402_BATCH_REFUND_ETH_USD, in the asset's atomic units (a USD stablecoin of `decimals`). Integer
 * arithmetic on micro-units, rounded up.
 */
function minimumRefund(gasPriceGwei: string, ethUsd: string, decimals: number): string {
  const micro = (v: string) => {
    const [whole = "0", frac = ""] = v.split(".");
    return BigInt(whole) * 1_000_000n + BigInt(frac.padEnd(6, "0"));
  };
  // gas × gwei·1e9 wei × usd/1e18 per wei × 10^decimals, with both factors in millionths.
  const numerator = REFUND_GAS * micro(gasPriceGwei) * micro(ethUsd) * 10n ** BigInt(decimals);
  const denominator = 10n ** 21n;
  return ((numerator + denominator - 1n) / denominator).toString();
}

/** MPP (method `tempo`): both MPP schemes. */
export interface MppConfig extends MppChainConfig {
  /** HMAC key of every challenge id: the same on every replica (>= 32 bytes). */
  secretKey: string;
  /** The challenges' protection space (`realm`); also bound into each charge's memo. */
  realm: string;
  /** Receiver of every charge and payee of every session channel, checksummed. */
  payTo: Address;
  /** Deposit the session offer suggests, decimal USDC.e. */
  suggestedDeposit: string;
}

interface AttemptLimit {
  perSecond: number;
  burst: number;
}

export interface PaymentVerifierConfig {
  host: string;
  grpcPort: number;
  metricsPort: number;
  redisUrl: string;
  /** REDIS_CLUSTER_NODES: a Redis Cluster instead of REDIS_URL's Redis. */
  redisClusterNodes: string[];
  natsUrl: string;
  /** NATS_STREAM_REPLICAS: replicas of the settlement stream when this service creates it first. */
  streamReplicas?: number;
  /** Prefix of every Redis key this service writes: `<REDIS_PREFIX>payment:` (tests use their own). */
  redisPrefix: string;
  /**
   * Redis unreachable at startup: false (the default; several replicas) waits for Redis, so
   * no replica ever serves payments without the shared replay guard; true (the embedded
   * default, one node) uses the in-memory single-node store.
   */
  redisStandIn: boolean;
  /** How long a verified payment stays reserved waiting for Settle or Release. */
  reservationTtlSeconds: number;
  /** x402 payment-identifier retries: the largest answer body kept, and for how long (core/answers.ts). */
  answers: { maxBytes: number; ttlSeconds: number };
  /** Isolates the settlement event subjects and streams on a shared NATS server (tests); empty in production. */
  eventsNamespace?: string;
  /** Where settlement events wait (on disk) until JetStream acknowledged them: OUTBOX_DIR/payment-verifier. */
  outboxDir: string;
  /** Payment attempts per client address and per payer (0 turns a limit off), and the refusal memory. */
  limits: { perClient: AttemptLimit; perPayer: AttemptLimit; refusalMemorySeconds: number };
  /** The schemes offered, in the order a 402 lists them. */
  schemes: SchemeName[];
  x402: X402Config;
  /** Set when an MPP scheme is offered. */
  mpp: MppConfig | undefined;
  /** Mesh callers accepted (the gateway) and their token digests. */
  meshCallers: MeshCallers;
}

function caip2(name: string, value: string): Caip2 {
  if (!/^eip155:[1-9][0-9]*$/.test(value)) {
    throw new ConfigError(`${name} must be an EVM CAIP-2 network id like eip155:8453, got "${value}"`);
  }
  return value as Caip2;
}

function schemesFromEnv(): SchemeName[] {
  const names = ENV.string("PAYMENT_SCHEMES")
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

function batchFromEnv(schemes: readonly SchemeName[]): X402BatchConfig | undefined {
  return schemes.includes("x402-batch") ? x402BatchFromEnv() : undefined;
}

/**
 * MPP's settings, read when an MPP scheme is offered. The receiver defaults to X402_PAY_TO: one
 * operator address on every chain.
 */
function mppFromEnv(x402PayTo: Address | undefined, needServerKey: boolean): MppConfig {
  const secretKey = ENV.secret("MPP_SECRET_KEY");
  if (!secretKey) {
    throw new ConfigError(
      "MPP_SECRET_KEY (or MPP_SECRET_KEY_FILE) is not set: the key every replica signs MPP challenge ids with (>= 32 bytes; or leave mpp-charge and mpp-session out of PAYMENT_SCHEMES)",
    );
  }
  if (Buffer.byteLength(secretKey, "utf8") < 32) {
    throw new ConfigError("MPP_SECRET_KEY is shorter than 32 bytes (generate one: openssl rand -base64 32)");
  }
  const chain = mppChainFromEnv(needServerKey);
  const payToValue = (ENV.raw("MPP_PAY_TO") ?? "") || x402PayTo || "";
  if (!payToValue) throw new ConfigError("MPP_PAY_TO is not set: the address that receives MPP payments");
  const payTo = parseAddress(ENV.raw("MPP_PAY_TO") ? "MPP_PAY_TO" : "X402_PAY_TO", payToValue);
  if (!isLoopback(chain.rpcUrl) && publicDevAccounts().addresses.has(payTo)) {
    throw new ConfigError(
      "MPP_PAY_TO is a public development account (the anvil/Hardhat test mnemonic): anyone could take what it receives; set your own address",
    );
  }
  return {
    ...chain,
    secretKey,
    realm: ENV.string("MPP_REALM"),
    payTo,
    suggestedDeposit: decimalAmount(
      "MPP_SESSION_SUGGESTED_DEPOSIT",
      ENV.string("MPP_SESSION_SUGGESTED_DEPOSIT"),
    ),
  };
}

function refundsPerPayer(): number {
  const n = ENV.int("X402_BATCH_REFUNDS_PER_PAYER_PER_HOUR");
  if (n < 0) throw new ConfigError("X402_BATCH_REFUNDS_PER_PAYER_PER_HOUR must be 0 (no bound) or more");
  return n;
}

function limitFromEnv(scope: "CLIENT" | "PAYER"): AttemptLimit {
  return {
    perSecond: ENV.int(`PAYMENT_ATTEMPTS_PER_${scope}_PER_SECOND`),
    burst: ENV.int(`PAYMENT_ATTEMPTS_PER_${scope}_BURST`),
  };
}

/** Where payments settle: Base mainnet USDC, or an explicit network and asset together. */
function settlementAsset(): { network: Caip2; asset: Address } {
  const network = ENV.raw("X402_NETWORK") ?? "";
  const asset = ENV.raw("X402_ASSET") ?? "";
  if (!network && !asset) {
    return {
      network: caip2("X402_NETWORK", ENV.string("X402_NETWORK")),
      asset: parseAddress("X402_ASSET", ENV.string("X402_ASSET")),
    };
  }
  // One without the other would offer a token address on a chain where it is something else.
  if (!network || !asset) {
    throw new ConfigError(
      `${network ? "X402_ASSET" : "X402_NETWORK"} is not set: X402_NETWORK and X402_ASSET are set together (both unset = Base mainnet USDC)`,
    );
  }
  return { network: caip2("X402_NETWORK", network), asset: parseAddress("X402_ASSET", asset) };
}

/**
 * The public development accounts are refused outside a chain on this machine: paid to one on a
 * real chain, the money is anyone's; settling with one, so is its gas.
 */
function refusePublicDevAccounts(payTo: Address, facilitator: FacilitatorConfig): void {
  const local = facilitator.mode === "local" ? isLoopback(facilitator.rpcUrl) : isLoopback(facilitator.url);
  if (local) return;
  const dev = publicDevAccounts();
  if (dev.addresses.has(payTo)) {
    throw new ConfigError(
      "X402_PAY_TO is a public development account (the anvil/Hardhat test mnemonic): anyone could take what it receives; set your own address",
    );
  }
  if (facilitator.mode === "local" && dev.keys.has(facilitator.privateKey.toLowerCase())) {
    throw new ConfigError(
      "X402_FACILITATOR_PRIVATE_KEY is a public development key (the anvil/Hardhat test mnemonic): use a key of your own",
    );
  }
}

export function loadConfig(): PaymentVerifierConfig {
  const redis = readRedisSettings();
  // No default: a default receiver would be someone else's address (or a public test account).
  const payToValue = ENV.raw("X402_PAY_TO") ?? "";
  if (!payToValue) {
    throw new ConfigError("X402_PAY_TO is not set: the address that receives every payment");
  }
  const payTo = parseAddress("X402_PAY_TO", payToValue);
  const { network, asset } = settlementAsset();
  const facilitator = facilitatorFromEnv();
  refusePublicDevAccounts(payTo, facilitator);
  const maxTimeoutSeconds = ENV.int("X402_MAX_TIMEOUT_SECONDS");
  const schemes = schemesFromEnv();
  if (maxTimeoutSeconds < MIN_OFFER_TIMEOUT_SECONDS) {
    throw new ConfigError(`X402_MAX_TIMEOUT_SECONDS must be at least ${MIN_OFFER_TIMEOUT_SECONDS}`);
  }
  // A claim waits for its answer until it lapses: with no answer ever kept, every retry would be
  // told "in progress" for minutes.
  if (ENV.int("PAYMENT_IDENTIFIER_MAX_ANSWER_BYTES") < 1) {
    throw new ConfigError("PAYMENT_IDENTIFIER_MAX_ANSWER_BYTES must be at least 1");
  }
  return {
    host: ENV.string("BIND_HOST"),
    grpcPort: ENV.int("GRPC_PORT"),
    metricsPort: ENV.int("METRICS_PORT"),
    redisUrl: redis.url,
    redisClusterNodes: redis.clusterNodes,
    natsUrl: ENV.secret("NATS_URL") ?? "",
    streamReplicas: ENV.int("NATS_STREAM_REPLICAS"),
    redisPrefix: paymentRedisPrefix(redis.prefix),
    redisStandIn: redis.standIn,
    reservationTtlSeconds: ENV.int("PAYMENT_RESERVATION_TTL_SECONDS"),
    answers: {
      maxBytes: ENV.int("PAYMENT_IDENTIFIER_MAX_ANSWER_BYTES"),
      ttlSeconds: ENV.raw("PAYMENT_IDENTIFIER_TTL_SECONDS")
        ? ENV.int("PAYMENT_IDENTIFIER_TTL_SECONDS")
        : maxTimeoutSeconds,
    },
    eventsNamespace: ENV.string("EVENTS_NAMESPACE"),
    outboxDir: resolve(ENV.string("OUTBOX_DIR"), "payment-verifier"),
    limits: {
      perClient: limitFromEnv("CLIENT"),
      perPayer: limitFromEnv("PAYER"),
      refusalMemorySeconds: ENV.int("PAYMENT_REFUSAL_MEMORY_SECONDS"),
    },
    schemes,
    x402: {
      network,
      asset,
      assetName: ENV.string("X402_ASSET_NAME"),
      assetVersion: ENV.string("X402_ASSET_VERSION"),
      assetSymbol: ENV.string("X402_ASSET_SYMBOL"),
      assetDecimals: ENV.int("X402_ASSET_DECIMALS"),
      payTo,
      maxTimeoutSeconds,
      facilitator,
      settlementRpcUrl:
        ENV.secret("X402_SETTLEMENT_RPC_URL") ||
        (facilitator.mode === "local" ? facilitator.rpcUrl : undefined),
      lookbackBlocks: ENV.int("X402_AUTHORIZATION_LOOKBACK_BLOCKS"),
      batch: batchFromEnv(schemes),
      batchRefunds: {
        minimum: minimumRefund(
          decimalAmount("X402_BATCH_REFUND_GAS_PRICE_GWEI", ENV.string("X402_BATCH_REFUND_GAS_PRICE_GWEI")),
          decimalAmount("X402_BATCH_REFUND_ETH_USD", ENV.string("X402_BATCH_REFUND_ETH_USD")),
          ENV.int("X402_ASSET_DECIMALS"),
        ),
        perPayerPerHour: refundsPerPayer(),
      },
    },
    mpp: schemes.some((s) => s.startsWith("mpp-"))
      ? mppFromEnv(payTo, schemes.includes("mpp-session"))
      : undefined,
    meshCallers: readMeshCallers(["gateway"]),
  };
}
