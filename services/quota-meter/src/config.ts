import { resolve } from "node:path";
import type { PlanFigures } from "@tollgate/catalog";
import { readDatabaseUrl } from "@tollgate/db";
import { ConfigError, type MeshCallers, readMeshCallers, readRedisSettings } from "@tollgate/platform";
import { ENV } from "./env.ts";

/** quota-meter's configuration, from the environment. Defaults suit the embedded local run. */
export interface QuotaMeterConfig {
  host: string;
  /** gRPC port (0 = any free port). */
  grpcPort: number;
  metricsPort: number;

  redisUrl: string;
  /** REDIS_CLUSTER_NODES: a Redis Cluster instead of REDIS_URL's Redis. */
  redisClusterNodes: string[];
  /** Prefix of every Redis key this service writes: `<REDIS_PREFIX>quota:` (isolates tests and tenants). */
  redisPrefix: string;
  /** Hot-path budget for the one Authorize round trip; past it the call fails open. */
  redisBudgetMs: number;
  /**
   * Longest Authorize wait while this process is busy (a burst queued on our side rather
   * than a slow Redis); kept under the gateway's Authorize deadline (1 s).
   */
  redisMaxWaitMs: number;
  /** After a timed-out Authorize, skip Redis (fail open at once) for this long. */
  failOpenCooldownMs: number;
  /** How long startup waits for Redis before deciding it is unreachable. */
  redisConnectTimeoutMs: number;
  /**
   * Use the in-memory single-node store when Redis is unreachable at startup. Off by default:
   * replicas with private counters would each grant the whole plan (the embedded default
   * turns it on).
   */
  redisStandIn: boolean;
  /** How often the fail-open snapshot of valid keys is reloaded from Redis. */
  keySnapshotRefreshMs: number;

  /** The system of record (PostgreSQL): accounts, keys, plans, usage rollups. */
  databaseUrl: string;
  /** Connections per process. */
  databasePoolSize: number;
  /** How long startup waits for PostgreSQL (schema migrated, Redis copy checked) before serving anyway. */
  databaseWaitMs: number;
  /** How often the Redis copy's mark is checked (a lost copy is re-seeded from PostgreSQL). */
  seedCheckMs: number;

  natsUrl: string;
  /** Isolates NATS subjects and streams (tests); empty in production. */
  eventsNamespace: string;
  /** This service's event outbox journal (OUTBOX_DIR/<service>). */
  outboxDir: string;
  streamReplicas: number;
  /** How long a refunded request id is remembered (a resent refund applies once). */
  usageDedupeTtlMs: number;

  /** The standard plan: what the operator's CLI gives an account without its own figures. */
  defaultDailyLimit: number;
  defaultMonthlyLimit: number;
  /** Burst guard for accounts without their own rate; 0 turns the default guard off. */
  defaultBurstPerSecond: number;
  /** The free plan: what a first dashboard sign-in gives (burst 0 = the default guard). */
  freePlan: PlanFigures;
  /** The most units one Authorize grants as a lease (1 = no leases), and how long it lives. */
  leaseMaxUnits: number;
  leaseTtlMs: number;

  /** Guards the admin API; admin is refused when unset. */
  operatorToken: string | undefined;
  /** Server pepper for key hashing; required (there is no public default). */
  apiKeyPepper: string;
  /** Mesh callers accepted (the gateway; the dashboard for user-scoped reads) and their token digests. */
  meshCallers: MeshCallers;
}

/** A pepper an attacker could guess would let a leaked key table be tested offline. */
const MIN_PEPPER_LENGTH = 16;

function pepper(): string {
  const value = ENV.secret("API_KEY_PEPPER");
  if (!value) {
    throw new ConfigError(
      "API_KEY_PEPPER (or API_KEY_PEPPER_FILE) is not set: the secret pepper API keys are hashed with (32 random bytes; keep it stable)",
    );
  }
  if (value.length < MIN_PEPPER_LENGTH) {
    throw new ConfigError(
      `API_KEY_PEPPER is shorter than ${MIN_PEPPER_LENGTH} characters: use 32 random bytes`,
    );
  }
  return value;
}

export const SERVICE = "quota-meter";

export function loadConfig(): QuotaMeterConfig {
  const redis = readRedisSettings();
  return {
    host: ENV.string("BIND_HOST"),
    grpcPort: ENV.int("GRPC_PORT"),
    metricsPort: ENV.int("METRICS_PORT"),
    redisUrl: redis.url,
    redisClusterNodes: redis.clusterNodes,
    redisPrefix: `${redis.prefix}quota:`,
    redisBudgetMs: ENV.int("REDIS_BUDGET_MS"),
    redisMaxWaitMs: ENV.int("REDIS_MAX_WAIT_MS"),
    failOpenCooldownMs: ENV.int("FAIL_OPEN_COOLDOWN_MS"),
    redisConnectTimeoutMs: ENV.int("REDIS_CONNECT_TIMEOUT_MS"),
    redisStandIn: redis.standIn,
    keySnapshotRefreshMs: ENV.int("KEY_SNAPSHOT_REFRESH_MS"),
    databaseUrl: readDatabaseUrl(),
    databasePoolSize: ENV.int("DATABASE_POOL_SIZE"),
    databaseWaitMs: ENV.int("DATABASE_WAIT_MS"),
    seedCheckMs: ENV.int("REDIS_SEED_CHECK_MS"),
    natsUrl: ENV.secret("NATS_URL") ?? "",
    eventsNamespace: ENV.string("EVENTS_NAMESPACE"),
    outboxDir: resolve(ENV.string("OUTBOX_DIR"), SERVICE),
    streamReplicas: ENV.int("NATS_STREAM_REPLICAS"),
    usageDedupeTtlMs: ENV.int("USAGE_DEDUPE_TTL_HOURS") * 3_600_000,
    defaultDailyLimit: ENV.int("DAILY_LIMIT"),
    defaultMonthlyLimit: ENV.int("MONTHLY_LIMIT"),
    defaultBurstPerSecond: ENV.int("BURST_PER_SECOND"),
    freePlan: {
      dailyLimit: ENV.int("FREE_DAILY_LIMIT"),
      monthlyLimit: ENV.int("FREE_MONTHLY_LIMIT"),
      burstPerSecond: ENV.int("FREE_BURST_PER_SECOND"),
    },
    leaseMaxUnits: Math.max(1, ENV.int("LEASE_MAX_UNITS")),
    leaseTtlMs: ENV.int("LEASE_TTL_MS"),
    operatorToken: ENV.secret("OPERATOR_TOKEN"),
    apiKeyPepper: pepper(),
    meshCallers: readMeshCallers(["gateway"], ["dashboard"]),
  };
}
