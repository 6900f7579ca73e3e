// Typed configuration of the payment verifier, read once from the environment.
import { pbkdf2Sync } from "node:crypto";
import { resolve } from "node:path";
import { priceAtomic } from "@tollgate/catalog";
import { ConfigError, type MeshCallers, readMeshCallers, readRedisSettings } from "@tollgate/platform";
import { bytesToHex, getAddress, isAddress, isHex } from "viem";
import { HDKey, privateKeyToAddress } from "viem/accounts";
import { ENV, MPP_ENV } from "./env.ts";

export { ConfigError };

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
  /** Set when x402-batch is offered. */
  batch: X402BatchConfig | undefined;
}

/** x402-batch's channel terms: the same for every price, so one channel serves every endpoint. */
export interface X402BatchConfig {
  /** The minimum deposit every offer announces, atomic units of the asset. */
  minDeposit: string;
  /** How long a payer waits to withdraw unilaterally; claims must land before it ends. */
  withdrawDelaySeconds: number;
  /** The receiver-authorizer key payment-verifier and the settlement worker sign claims and refunds with. */
  authorizerKey: `0x${string}`;
}

/** The payment schemes this build can offer, by the name used in metrics, events and PAYMENT_SCHEMES. */
export const SCHEME_NAMES = ["exact", "x402-batch", "mpp-charge", "mpp-session"] as const;
export type SchemeName = (typeof SCHEME_NAMES)[number];

/** The two stablecoins MPP charges accept (spec 1.4), TIP-20 tokens with 6 decimals; sessions take USDC.e. */
export const MPP_CURRENCIES = {
  pathUsd: { address: "0x20C0000000000000000000000000000000000000", symbol: "pathUSD" },
  usdce: { address: "0x20C000000000000000000000b9537d11c60E8b50", symbol: "USDC.e" },
} as const satisfies Record<string, { address: Address; symbol: string }>;
/** Where TIP-1034 puts the channel reserve precompile on every Tempo chain. */
export const TIP1034_CHANNEL_RESERVE: Address = "0x4d50500000000000000000000000000000000000";

/** The Tempo side of MPP: shared by both MPP schemes and the session settlement loop. */
export interface MppChainConfig {
  /** The Tempo chain's JSON-RPC (servers go through it: simulations, broadcasts, channel reads). */
  rpcUrl: string;
  chainId: number;
  /**
   * The server's own Tempo account: the session channels' operator, which settles and closes them
   * and pays those transactions' fees (in `feeToken`). Required with mpp-session.
   */
  serverKey: `0x${string}` | undefined;
  feeToken: Address;
  channelReserve: Address;
  /** When the settlement loop settles a channel: this much unsettled (atomic units) or this old. */
  settle: { minAmount: bigint; intervalMs: number; tickMs: number };
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

/**
 * anvil's and Hardhat's default mnemonic. Every key it derives is public: whatever an address of
 * it receives on a real chain, anyone can take; its keys pay no real gas safely either.
 */
const PUBLIC_DEV_MNEMONIC = "test test test test test test test test test test test junk";
/** The devnet funds 20 of them (deploy/devnet/src/accounts.ts); a margin on top. */
const PUBLIC_DEV_ACCOUNTS = 30;

function publicDevAccounts(): { addresses: Set<string>; keys: Set<string> } {
  const seed = pbkdf2Sync(PUBLIC_DEV_MNEMONIC.normalize("NFKD"), "mnemonic", 2048, 64, "sha512");
  const master = HDKey.fromMasterSeed(seed);
  const addresses = new Set<string>();
  const keys = new Set<string>();
  for (let i = 0; i < PUBLIC_DEV_ACCOUNTS; i++) {
    const key = master.derive(`m/44'/60'/0'/0/${i}`).privateKey;
    if (!key) continue;
    keys.add(bytesToHex(key));
    addresses.add(privateKeyToAddress(bytesToHex(key)));
  }
  return { addresses, keys };
}

/** A URL on this machine: the only place a devnet chain or a test facilitator can be. */
function isLoopback(url: string): boolean {
  const host = URL.parse(url)?.hostname ?? "";
  return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

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

/** The x402 facilitator: remote, or in-process with our settlement key (the settlement worker reads it too). */
export function facilitatorFromEnv(): FacilitatorConfig {
  // Either may carry a provider key: read as secrets (never logged).
  const url = ENV.secret("X402_FACILITATOR_URL") ?? "";
  const privateKey = ENV.secret("X402_FACILITATOR_PRIVATE_KEY");
  if (url && privateKey) {
    throw new ConfigError(
      "set either X402_FACILITATOR_URL (remote) or X402_FACILITATOR_PRIVATE_KEY (self-hosted)",
    );
  }
  if (url) {
    if (!url.startsWith("https://") && !isLoopback(url)) {
      throw new ConfigError("X402_FACILITATOR_URL must be https (plain http only on this machine)");
    }
    // fetch refuses such URLs, and the client would print the refusal (with them) on every try.
    const parsed = URL.parse(url);
    if (!parsed) throw new ConfigError("X402_FACILITATOR_URL is not a URL");
    if (parsed.username || parsed.password) {
      throw new ConfigError("X402_FACILITATOR_URL must not carry user:password (put a key in the path)");
    }
    return { mode: "remote", url, timeoutMs: ENV.int("X402_FACILITATOR_TIMEOUT_MS") };
  }
  if (privateKey) {
    const key = privateKey.startsWith("0x") ? privateKey : `0x${privateKey}`;
    if (!isHex(key) || key.length !== 66) {
      throw new ConfigError("X402_FACILITATOR_PRIVATE_KEY must be a 32-byte hex private key");
    }
    const rpcUrl = ENV.secret("X402_SETTLEMENT_RPC_URL") ?? "";
    if (!rpcUrl)
      throw new ConfigError("X402_SETTLEMENT_RPC_URL is required with X402_FACILITATOR_PRIVATE_KEY");
    return {
      mode: "local",
      privateKey: key,
      rpcUrl,
      confirmationTimeoutMs: ENV.int("X402_CONFIRMATION_TIMEOUT_MS"),
      pollingIntervalMs: ENV.int("X402_RECEIPT_POLL_MS"),
      rpcTimeoutMs: ENV.int("X402_SETTLEMENT_RPC_TIMEOUT_MS"),
    };
  }
  throw new ConfigError(
    "no x402 facilitator: set X402_FACILITATOR_URL, or X402_FACILITATOR_PRIVATE_KEY with X402_SETTLEMENT_RPC_URL",
  );
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

/** x402-batch's terms and authorizer key (the settlement worker reads the same variables). */
export function x402BatchFromEnv(): X402BatchConfig {
  const key = ENV.secret("X402_BATCH_AUTHORIZER_PRIVATE_KEY");
  if (!key) {
    throw new ConfigError(
      "X402_BATCH_AUTHORIZER_PRIVATE_KEY is not set: x402-batch signs claims and refunds with it (or leave x402-batch out of PAYMENT_SCHEMES)",
    );
  }
  const authorizerKey = key.startsWith("0x") ? key : `0x${key}`;
  if (!isHex(authorizerKey) || authorizerKey.length !== 66) {
    throw new ConfigError("X402_BATCH_AUTHORIZER_PRIVATE_KEY must be a 32-byte hex private key");
  }
  const minDeposit = ENV.string("X402_BATCH_MIN_DEPOSIT");
  if (!/^[1-9][0-9]{0,30}$/.test(minDeposit)) {
    throw new ConfigError(
      `X402_BATCH_MIN_DEPOSIT must be a positive integer of atomic units, got "${minDeposit}"`,
    );
  }
  const withdrawDelaySeconds = ENV.int("X402_BATCH_WITHDRAW_DELAY_SECONDS");
  if (withdrawDelaySeconds < 900 || withdrawDelaySeconds > 2_592_000) {
    throw new ConfigError("X402_BATCH_WITHDRAW_DELAY_SECONDS must be from 900 (15 min) to 2592000 (30 days)");
  }
  return { minDeposit, withdrawDelaySeconds, authorizerKey: authorizerKey as `0x${string}` };
}

/** A positive decimal amount of a 6-decimal token ("1", "0.25"). */
function decimalAmount(name: string, value: string): string {
  if (!/^(0|[1-9][0-9]{0,20})(\.[0-9]{1,6})?$/.test(value) || /^0(\.0*)?$/.test(value)) {
    throw new ConfigError(
      `${name} must be a positive decimal amount with at most 6 decimals, got "${value}"`,
    );
  }
  return value;
}

/**
 * MPP's settings, read when an MPP scheme is offered (and by the session settlement loop, which
 * needs the server key). The receiver defaults to X402_PAY_TO: one operator address on every chain.
 */
/**
 * The Tempo side of MPP (what the session settlement loop needs too, without the challenge secret):
 * the chain, the server's key that operates session channels, the fee token, the settle schedule.
 */
export function mppChainFromEnv(needServerKey: boolean): MppChainConfig {
  const rpcUrl = MPP_ENV.secret("MPP_TEMPO_RPC_URL") ?? "";
  if (!rpcUrl) throw new ConfigError("MPP_TEMPO_RPC_URL is not set: the Tempo chain's JSON-RPC");
  if (!rpcUrl.startsWith("https://") && !isLoopback(rpcUrl)) {
    throw new ConfigError("MPP_TEMPO_RPC_URL must be https (plain http only on this machine)");
  }
  const rawKey = MPP_ENV.secret("MPP_SERVER_PRIVATE_KEY");
  let serverKey: `0x${string}` | undefined;
  if (rawKey) {
    const key = rawKey.startsWith("0x") ? rawKey : `0x${rawKey}`;
    if (!isHex(key) || key.length !== 66) {
      throw new ConfigError("MPP_SERVER_PRIVATE_KEY must be a 32-byte hex private key");
    }
    serverKey = key as `0x${string}`;
  } else if (needServerKey) {
    throw new ConfigError(
      "MPP_SERVER_PRIVATE_KEY (or MPP_SERVER_PRIVATE_KEY_FILE) is not set: mpp-session operates its channels (settle, close) with it (or leave mpp-session out of PAYMENT_SCHEMES)",
    );
  }
  if (serverKey && !isLoopback(rpcUrl) && publicDevAccounts().keys.has(serverKey.toLowerCase())) {
    throw new ConfigError(
      "MPP_SERVER_PRIVATE_KEY is a public development key (the anvil/Hardhat test mnemonic): use a key of your own",
    );
  }
  const chainId = MPP_ENV.int("MPP_CHAIN_ID");
  if (chainId === 0) throw new ConfigError("MPP_CHAIN_ID must be a chain id (4217 is Tempo mainnet)");
  const settleMinAmount = decimalAmount(
    "MPP_SESSION_SETTLE_MIN_AMOUNT",
    MPP_ENV.string("MPP_SESSION_SETTLE_MIN_AMOUNT"),
  );
  return {
    rpcUrl,
    chainId,
    serverKey,
    feeToken: address("MPP_FEE_TOKEN", MPP_ENV.string("MPP_FEE_TOKEN")),
    channelReserve: address("MPP_CHANNEL_RESERVE", MPP_ENV.string("MPP_CHANNEL_RESERVE")),
    settle: {
      minAmount: priceAtomic(settleMinAmount),
      intervalMs: MPP_ENV.int("MPP_SESSION_SETTLE_INTERVAL_SECONDS") * 1000,
      tickMs: Math.max(1, MPP_ENV.int("MPP_SESSION_SETTLE_TICK_SECONDS")) * 1000,
    },
  };
}

/**
 * MPP's settings, read when an MPP scheme is offered. The receiver defaults to X402_PAY_TO: one
 * operator address on every chain.
 */
export function mppFromEnv(x402PayTo: Address | undefined, needServerKey: boolean): MppConfig {
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
  const payTo = address(ENV.raw("MPP_PAY_TO") ? "MPP_PAY_TO" : "X402_PAY_TO", payToValue);
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
      asset: address("X402_ASSET", ENV.string("X402_ASSET")),
    };
  }
  // One without the other would offer a token address on a chain where it is something else.
  if (!network || !asset) {
    throw new ConfigError(
      `${network ? "X402_ASSET" : "X402_NETWORK"} is not set: X402_NETWORK and X402_ASSET are set together (both unset = Base mainnet USDC)`,
    );
  }
  return { network: caip2("X402_NETWORK", network), asset: address("X402_ASSET", asset) };
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

/** Where payment-verifier's keys live in Redis (the settlement worker reads its MPP state there too). */
export function paymentRedisPrefix(deploymentPrefix: string): string {
  return `${deploymentPrefix}payment:`;
}

export function loadConfig(): PaymentVerifierConfig {
  const redis = readRedisSettings();
  // No default: a default receiver would be someone else's address (or a public test account).
  const payToValue = ENV.raw("X402_PAY_TO") ?? "";
  if (!payToValue) {
    throw new ConfigError("X402_PAY_TO is not set: the address that receives every payment");
  }
  const payTo = address("X402_PAY_TO", payToValue);
  const { network, asset } = settlementAsset();
  const facilitator = facilitatorFromEnv();
  refusePublicDevAccounts(payTo, facilitator);
  const maxTimeoutSeconds = ENV.int("X402_MAX_TIMEOUT_SECONDS");
  const schemes = schemesFromEnv();
  // The exact scheme's facilitator refuses authorizations that expire within 6 s.
  if (maxTimeoutSeconds < 10) throw new ConfigError("X402_MAX_TIMEOUT_SECONDS must be at least 10");
  return {
    host: ENV.string("BIND_HOST"),
    grpcPort: ENV.int("GRPC_PORT"),
    metricsPort: ENV.int("METRICS_PORT"),
    redisUrl: redis.url,
    natsUrl: ENV.secret("NATS_URL") ?? "",
    redisPrefix: paymentRedisPrefix(redis.prefix),
    redisStandIn: redis.standIn,
    reservationTtlSeconds: ENV.int("PAYMENT_RESERVATION_TTL_SECONDS"),
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
    },
    mpp: schemes.some((s) => s.startsWith("mpp-"))
      ? mppFromEnv(payTo, schemes.includes("mpp-session"))
      : undefined,
    meshCallers: readMeshCallers(["gateway"]),
  };
}

/** The chain id of an `eip155:<id>` network. */
export function chainIdOf(network: Caip2): number {
  return Number(network.slice("eip155:".length));
}
