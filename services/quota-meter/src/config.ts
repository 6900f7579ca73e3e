import { resolve } from "node:path";
import { PLAN_DEFAULTS } from "@tollgate/catalog";
import { bindHost, envBool, envInt, envString, readSecret } from "@tollgate/platform";

/** quota-meter's configuration, from the environment. Defaults suit the embedded local run. */
export interface QuotaMeterConfig {
  host: string;
  /** gRPC port (0 = any free port). */
  grpcPort: number;
  metricsPort: number;

  redisUrl: string;
  /** Prefix of every Redis key this service writes (isolates tests and tenants). */
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
  /** Use the in-memory single-node store when Redis is unreachable at startup. */
  redisStandIn: boolean;
  /** How often the fail-open snapshot of valid keys is reloaded from Redis. */
  keySnapshotRefreshMs: number;

  natsUrl: string;
  /** Isolates NATS subjects and streams (tests); empty in production. */
  eventsNamespace: string;
  /** This service's event outbox journal (OUTBOX_DIR/<service>). */
  outboxDir: string;
  streamReplicas: number;
  /** How long a usage event id is remembered for idempotent counting. */
  usageDedupeTtlMs: number;

  defaultDailyLimit: number;
  defaultMonthlyLimit: number;
  /** Burst guard for accounts without their own rate; 0 turns the default guard off. */
  defaultBurstPerSecond: number;

  /** Guards the admin API; admin is refused when unset. */
  operatorToken: string | undefined;
  /** Server pepper for key hashing; a development default is used (loudly) when unset. */
  apiKeyPepper: string | undefined;
}

export const SERVICE = "quota-meter";

export function loadConfig(): QuotaMeterConfig {
  return {
    host: bindHost(),
    grpcPort: envInt("GRPC_PORT", 50051),
    metricsPort: envInt("METRICS_PORT", 9461),
    redisUrl: envString("REDIS_URL", "redis://127.0.0.1:6379"),
    redisPrefix: envString("REDIS_PREFIX", "tg:qm:"),
    redisBudgetMs: envInt("REDIS_BUDGET_MS", 50),
    redisMaxWaitMs: envInt("REDIS_MAX_WAIT_MS", 500),
    failOpenCooldownMs: envInt("FAIL_OPEN_COOLDOWN_MS", 1_000),
    redisConnectTimeoutMs: envInt("REDIS_CONNECT_TIMEOUT_MS", 1_500),
    redisStandIn: envBool("REDIS_STANDIN", true),
    keySnapshotRefreshMs: envInt("KEY_SNAPSHOT_REFRESH_MS", 30_000),
    natsUrl: envString("NATS_URL", "nats://127.0.0.1:4222"),
    eventsNamespace: envString("EVENTS_NAMESPACE", ""),
    outboxDir: resolve(envString("OUTBOX_DIR", ".tollgate/outbox"), SERVICE),
    streamReplicas: envInt("NATS_STREAM_REPLICAS", 1),
    usageDedupeTtlMs: envInt("USAGE_DEDUPE_TTL_HOURS", 48) * 3_600_000,
    defaultDailyLimit: envInt("DAILY_LIMIT", PLAN_DEFAULTS.dailyLimit),
    defaultMonthlyLimit: envInt("MONTHLY_LIMIT", PLAN_DEFAULTS.monthlyLimit),
    defaultBurstPerSecond: envInt("BURST_PER_SECOND", 50),
    operatorToken: readSecret("OPERATOR_TOKEN"),
    apiKeyPepper: readSecret("API_KEY_PEPPER"),
  };
}
