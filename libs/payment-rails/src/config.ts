// The payment rails' settings and their readers: the x402 facilitator, x402-batch's channel terms
// and the Tempo chain of MPP, read alike by payment-verifier and the settlement worker.
import { priceAtomic } from "@tollgate/catalog";
import { ConfigError } from "@tollgate/platform";
import { isHex } from "viem";
import { decimalAmount, isLoopback, parseAddress, publicDevAccounts } from "./config-guards.ts";
import { RAILS_ENV as ENV } from "./env.ts";

export type Address = `0x${string}`;
export type Caip2 = `${string}:${string}`;

/** The chain id of an `eip155:<id>` network. */
export function chainIdOf(network: Caip2): number {
  return Number(network.slice("eip155:".length));
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

/**
 * The Tempo side of MPP (what the session settlement loop needs too, without the challenge secret):
 * the chain, the server's key that operates session channels, the fee token, the settle schedule.
 */
export function mppChainFromEnv(needServerKey: boolean): MppChainConfig {
  const rpcUrl = ENV.secret("MPP_TEMPO_RPC_URL") ?? "";
  if (!rpcUrl) throw new ConfigError("MPP_TEMPO_RPC_URL is not set: the Tempo chain's JSON-RPC");
  if (!rpcUrl.startsWith("https://") && !isLoopback(rpcUrl)) {
    throw new ConfigError("MPP_TEMPO_RPC_URL must be https (plain http only on this machine)");
  }
  const rawKey = ENV.secret("MPP_SERVER_PRIVATE_KEY");
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
  const chainId = ENV.int("MPP_CHAIN_ID");
  if (chainId === 0) throw new ConfigError("MPP_CHAIN_ID must be a chain id (4217 is Tempo mainnet)");
  const settleMinAmount = decimalAmount(
    "MPP_SESSION_SETTLE_MIN_AMOUNT",
    ENV.string("MPP_SESSION_SETTLE_MIN_AMOUNT"),
  );
  return {
    rpcUrl,
    chainId,
    serverKey,
    feeToken: parseAddress("MPP_FEE_TOKEN", ENV.string("MPP_FEE_TOKEN")),
    channelReserve: parseAddress("MPP_CHANNEL_RESERVE", ENV.string("MPP_CHANNEL_RESERVE")),
    settle: {
      minAmount: priceAtomic(settleMinAmount),
      intervalMs: ENV.int("MPP_SESSION_SETTLE_INTERVAL_SECONDS") * 1000,
      tickMs: Math.max(1, ENV.int("MPP_SESSION_SETTLE_TICK_SECONDS")) * 1000,
    },
  };
}

/** Where payment-verifier's keys live in Redis (the settlement worker reads its MPP state there too). */
export function paymentRedisPrefix(deploymentPrefix: string): string {
  return `${deploymentPrefix}payment:`;
}
