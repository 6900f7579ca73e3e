// The settlement worker's configuration, read once from the environment.
import { resolve } from "node:path";
import { readDatabaseUrl } from "@tollgate/db";
import { type MppChainConfig, mppChainFromEnv, paymentRedisPrefix } from "@tollgate/payment-verifier/config";
import { ConfigError, readRedisSettings } from "@tollgate/platform";
import { type Address, getAddress, isAddress } from "viem";
import { ENV } from "./env.ts";

export const SERVICE = "settlement-worker";

/** The chain payments settle on, read for reconciliation (the same variables payment-verifier reads). */
export interface ChainConfig {
  rpcUrl: string;
  /** CAIP-2, `eip155:<chainId>`: how the ledger names it (`payment_network`). */
  network: string;
  asset: Address;
  payTo: Address;
}

export interface SettlementWorkerConfig {
  host: string;
  grpcPort: number;
  metricsPort: number;
  databaseUrl: string;
  databasePoolSize: number;
  /** How long startup waits for the schema to be migrated before serving anyway. */
  databaseWaitMs: number;
  natsUrl: string;
  /** Isolates NATS subjects and streams (tests); empty in production. */
  eventsNamespace: string;
  streamReplicas: number;
  /** Guards the admin API; admin is refused when unset. */
  operatorToken: string | undefined;
  /** Undefined: reconciliation is unavailable (no settlement chain configured). */
  chain: ChainConfig | undefined;
  /** Undefined: MPP session channels are not settled here (MPP_SERVER_PRIVATE_KEY unset). */
  sessions: SessionSettlementConfig | undefined;
}

/**
 * MPP session channels: settled on a schedule by ONE worker replica (a Redis lease), from the state
 * payment-verifier keeps in Redis (the same REDIS_URL and REDIS_PREFIX), with the key that
 * operates the channels (payment-verifier's MPP_SERVER_PRIVATE_KEY).
 */
export interface SessionSettlementConfig extends MppChainConfig {
  serverKey: `0x${string}`;
  redisUrl: string;
  /** payment-verifier's key prefix (`<REDIS_PREFIX>payment:`): its MPP state is under `<prefix>mpp:`. */
  redisPrefix: string;
  /** How long one replica holds the settling lease without renewing it. */
  leaseMs: number;
  /** The channel_settled events' outbox journal (OUTBOX_DIR/settlement-worker). */
  outboxDir: string;
}

function sessions(): SessionSettlementConfig | undefined {
  if (!ENV.secret("MPP_SERVER_PRIVATE_KEY")) return undefined;
  const chain = mppChainFromEnv(true);
  const redis = readRedisSettings();
  if (!chain.serverKey) throw new ConfigError("MPP_SERVER_PRIVATE_KEY is not set");
  return {
    ...chain,
    serverKey: chain.serverKey,
    redisUrl: redis.url,
    redisPrefix: paymentRedisPrefix(redis.prefix),
    leaseMs: Math.max(chain.settle.tickMs * 3, 30_000),
    outboxDir: resolve(ENV.string("OUTBOX_DIR"), SERVICE),
  };
}

function address(name: string, value: string): Address {
  if (!isAddress(value, { strict: false }))
    throw new ConfigError(`${name} must be a 0x-prefixed 20-byte address`);
  return getAddress(value);
}

function chain(): ChainConfig | undefined {
  const rpcUrl = ENV.secret("X402_SETTLEMENT_RPC_URL");
  const network = ENV.raw("X402_NETWORK") ?? "";
  const asset = ENV.raw("X402_ASSET") ?? "";
  const payTo = ENV.raw("X402_PAY_TO") ?? "";
  if (!rpcUrl && !asset && !payTo) return undefined;
  if (!rpcUrl || !network || !asset || !payTo) {
    throw new ConfigError(
      "reconciliation needs X402_SETTLEMENT_RPC_URL, X402_NETWORK, X402_ASSET and X402_PAY_TO together (or none of them)",
    );
  }
  if (!/^eip155:[0-9]+$/.test(network))
    throw new ConfigError("X402_NETWORK must be CAIP-2 (eip155:<chain id>)");
  return { rpcUrl, network, asset: address("X402_ASSET", asset), payTo: address("X402_PAY_TO", payTo) };
}

export function loadConfig(): SettlementWorkerConfig {
  return {
    host: ENV.string("BIND_HOST"),
    grpcPort: ENV.int("GRPC_PORT"),
    metricsPort: ENV.int("METRICS_PORT"),
    databaseUrl: readDatabaseUrl(),
    databasePoolSize: ENV.int("DATABASE_POOL_SIZE"),
    databaseWaitMs: ENV.int("DATABASE_WAIT_MS"),
    natsUrl: ENV.secret("NATS_URL") ?? "",
    eventsNamespace: ENV.raw("EVENTS_NAMESPACE") ?? "",
    streamReplicas: ENV.int("NATS_STREAM_REPLICAS"),
    operatorToken: ENV.secret("OPERATOR_TOKEN"),
    chain: chain(),
    sessions: sessions(),
  };
}
