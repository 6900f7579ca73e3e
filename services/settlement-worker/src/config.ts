// The settlement worker's configuration, read once from the environment.
import { resolve } from "node:path";
import { readDatabaseUrl } from "@tollgate/db";
import {
  type FacilitatorConfig,
  facilitatorFromEnv,
  type MppChainConfig,
  mppChainFromEnv,
  paymentRedisPrefix,
  x402BatchFromEnv,
} from "@tollgate/payment-rails";
import { ConfigError, type MeshCallers, readMeshCallers, readRedisSettings } from "@tollgate/platform";
import { type Address, getAddress, isAddress } from "viem";
import type { ReleasedPolicy } from "./core/ledger.ts";
import { type ClaimPolicy, defaultClaimIntervalSeconds } from "./core/x402-batch-claims.ts";
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
  /** The dashboard, when it lists its users' own payments (MESH_CALLER_DASHBOARD_SHA256). */
  meshCallers: MeshCallers;
  /** How many released calls the ledger keeps per payer, and for how long. */
  released: ReleasedPolicy;
  /** Undefined: reconciliation is unavailable (no settlement chain configured). */
  chain: ChainConfig | undefined;
  /** payment-verifier's Redis (REDIS_URL), where the channel state of both channel schemes lives. */
  redisUrl: string;
  /** REDIS_CLUSTER_NODES: a Redis Cluster instead of REDIS_URL's Redis. */
  redisClusterNodes: string[];
  /** payment-verifier's key prefix (`<REDIS_PREFIX>payment:`): its channels and the signer lock are under it. */
  redisPrefix: string;
  /** The channel operations' events' outbox journal (OUTBOX_DIR/settlement-worker). */
  outboxDir: string;
  /** Undefined: MPP session channels are not settled here (MPP_SERVER_PRIVATE_KEY unset). */
  sessions: SessionSettlementConfig | undefined;
  /** Undefined: x402-batch channels are not claimed here (X402_BATCH_AUTHORIZER_PRIVATE_KEY unset). */
  x402Batch: X402BatchClaimConfig | undefined;
}

/**
 * x402-batch channels: claimed, settled and refunded by ONE worker replica (a Redis lease with an
 * epoch), from the channel records payment-verifier keeps in Redis, through the same facilitator
 * (payment-verifier's X402_FACILITATOR_* settings: the same settlement key, its nonces shared
 * through the signer lock) and signed with the same receiver-authorizer key.
 */
export interface X402BatchClaimConfig {
  chain: ChainConfig;
  facilitator: FacilitatorConfig;
  authorizerKey: `0x${string}`;
  withdrawDelaySeconds: number;
  /** When claims run: this much unclaimed, this old, or a payer withdrawing; idle refunds. */
  policy: ClaimPolicy;
  /** How often a pass runs (lease renewal, due claims, settles, refunds). */
  tickMs: number;
  leaseMs: number;
  maxClaimsPerBatch: number;
}

/**
 * MPP session channels: settled on a schedule by ONE worker replica (a Redis lease), from the state
 * payment-verifier keeps in Redis (under `<REDIS_PREFIX>payment:mpp:`), with the key that operates
 * the channels (payment-verifier's MPP_SERVER_PRIVATE_KEY).
 */
export interface SessionSettlementConfig extends MppChainConfig {
  serverKey: `0x${string}`;
  /** How long one replica holds the settling lease without renewing it. */
  leaseMs: number;
}

function sessions(): SessionSettlementConfig | undefined {
  if (!ENV.secret("MPP_SERVER_PRIVATE_KEY")) return undefined;
  const chain = mppChainFromEnv(true);
  if (!chain.serverKey) throw new ConfigError("MPP_SERVER_PRIVATE_KEY is not set");
  return {
    ...chain,
    serverKey: chain.serverKey,
    leaseMs: Math.max(chain.settle.tickMs * 3, 30_000),
  };
}

function x402Batch(chain: ChainConfig | undefined): X402BatchClaimConfig | undefined {
  if (!ENV.secret("X402_BATCH_AUTHORIZER_PRIVATE_KEY")) return undefined;
  if (!chain) {
    throw new ConfigError(
      "x402-batch claims need the settlement chain: X402_SETTLEMENT_RPC_URL, X402_NETWORK, X402_ASSET and X402_PAY_TO",
    );
  }
  const terms = x402BatchFromEnv();
  const delay = terms.withdrawDelaySeconds;
  const interval = ENV.raw("X402_BATCH_CLAIM_INTERVAL_SECONDS")
    ? ENV.int("X402_BATCH_CLAIM_INTERVAL_SECONDS")
    : defaultClaimIntervalSeconds(delay);
  // Claims must land before a payer's withdrawal ends: room for at least two passes and retries.
  if (interval < 1 || interval > delay / 2) {
    throw new ConfigError(
      `X402_BATCH_CLAIM_INTERVAL_SECONDS must be from 1 to half the withdraw delay (${delay / 2} s), got ${interval}`,
    );
  }
  const minClaim = ENV.string("X402_BATCH_MIN_CLAIM_AMOUNT");
  if (!/^[0-9]{1,30}$/.test(minClaim)) {
    throw new ConfigError(
      `X402_BATCH_MIN_CLAIM_AMOUNT must be an integer of atomic units, got "${minClaim}"`,
    );
  }
  const idle = ENV.int("X402_BATCH_IDLE_REFUND_SECONDS");
  if (idle < 0) throw new ConfigError("X402_BATCH_IDLE_REFUND_SECONDS must be 0 (never) or more");
  const tickMs = ENV.int("X402_BATCH_TICK_MS");
  if (tickMs < 50) throw new ConfigError("X402_BATCH_TICK_MS must be at least 50");
  const maxClaimsPerBatch = ENV.int("X402_BATCH_MAX_CLAIMS_PER_BATCH");
  if (maxClaimsPerBatch < 1) throw new ConfigError("X402_BATCH_MAX_CLAIMS_PER_BATCH must be at least 1");
  return {
    chain,
    facilitator: facilitatorFromEnv(),
    authorizerKey: terms.authorizerKey,
    withdrawDelaySeconds: delay,
    policy: { minClaimAmount: BigInt(minClaim), claimIntervalMs: interval * 1000, idleRefundMs: idle * 1000 },
    tickMs,
    // Long enough that a slow pass never loses it; a dead holder's lease lapses after it.
    leaseMs: ENV.raw("X402_BATCH_LEASE_MS") ? ENV.int("X402_BATCH_LEASE_MS") : Math.max(tickMs * 3, 30_000),
    maxClaimsPerBatch,
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

function released(): ReleasedPolicy {
  const retentionDays = ENV.int("LEDGER_RELEASED_RETENTION_DAYS");
  if (retentionDays < 1) throw new ConfigError("LEDGER_RELEASED_RETENTION_DAYS must be at least 1");
  return { perHour: ENV.int("LEDGER_RELEASED_PER_HOUR"), retentionDays };
}

export function loadConfig(): SettlementWorkerConfig {
  const settlementChain = chain();
  const redis = readRedisSettings();
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
    meshCallers: readMeshCallers([], ["dashboard"]),
    released: released(),
    chain: settlementChain,
    redisUrl: redis.url,
    redisClusterNodes: redis.clusterNodes,
    redisPrefix: paymentRedisPrefix(redis.prefix),
    outboxDir: resolve(ENV.string("OUTBOX_DIR"), SERVICE),
    sessions: sessions(),
    x402Batch: x402Batch(settlementChain),
  };
}
