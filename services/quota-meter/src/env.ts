// quota-meter's environment, declared once: config.ts reads through it, the README table is rendered
// from it (pnpm gen:env) and the Kubernetes manifests are checked against it (test/k8s).
import { FREE_PLAN_DEFAULTS, PLAN_DEFAULTS } from "@tollgate/catalog";
import {
  DATABASE_ENV,
  DEFAULT_PORTS,
  envTable,
  meshCallerRows,
  NATS_ENV,
  OPERATOR_ENV,
  outboxEnv,
  REDIS_ENV,
  serviceEnv,
} from "@tollgate/platform";

export const ENV = envTable([
  ...serviceEnv(DEFAULT_PORTS["quota-meter"]),
  ...REDIS_ENV,
  {
    name: "REDIS_BUDGET_MS",
    default: "50",
    description: "budget of the one Authorize round trip; past it the call fails open",
  },
  {
    name: "REDIS_MAX_WAIT_MS",
    default: "500",
    description:
      "longest Authorize wait while this process itself is busy (see fail-open); under the gateway's 1 s deadline",
  },
  {
    name: "FAIL_OPEN_COOLDOWN_MS",
    default: "1000",
    description: "after 3 timed-out Authorize calls in a row, skip Redis (fail open at once) this long",
  },
  { name: "REDIS_CONNECT_TIMEOUT_MS", default: "1500", description: "how long start-up waits for Redis" },
  {
    name: "REDIS_SEED_CHECK_MS",
    default: "1000",
    description:
      "how often the Redis copy's mark is checked (a lost copy is re-seeded from PostgreSQL; a reconnect checks at once)",
  },
  { name: "KEY_SNAPSHOT_REFRESH_MS", default: "30000", description: "reload of the fail-open key snapshot" },
  ...DATABASE_ENV,
  ...NATS_ENV,
  ...outboxEnv("quota-meter"),
  {
    name: "USAGE_DEDUPE_TTL_HOURS",
    default: "48",
    description:
      "how long a refunded request id is remembered (usage batches are deduplicated in PostgreSQL)",
  },
  {
    name: "DAILY_LIMIT",
    default: String(PLAN_DEFAULTS.dailyLimit),
    description:
      "the standard plan's daily quota: accounts the operator creates (`pnpm tollgate`) without their own (0 = uncapped)",
  },
  {
    name: "MONTHLY_LIMIT",
    default: String(PLAN_DEFAULTS.monthlyLimit),
    description: "the standard plan's monthly quota (0 = uncapped)",
  },
  {
    name: "BURST_PER_SECOND",
    default: String(PLAN_DEFAULTS.burstPerSecond),
    description: "burst guard of accounts without their own rate (0 = no default guard)",
  },
  {
    name: "FREE_DAILY_LIMIT",
    default: String(FREE_PLAN_DEFAULTS.dailyLimit),
    description:
      "the free plan's daily quota: accounts a first dashboard sign-in creates (0 = uncapped); the gateway's `/api/pricing` and the dashboard show it",
  },
  {
    name: "FREE_MONTHLY_LIMIT",
    default: String(FREE_PLAN_DEFAULTS.monthlyLimit),
    description: "the free plan's monthly quota (0 = uncapped)",
  },
  {
    name: "FREE_BURST_PER_SECOND",
    default: String(FREE_PLAN_DEFAULTS.burstPerSecond),
    description: "the free plan's burst guard, calls a second (0 = `BURST_PER_SECOND`)",
  },
  {
    name: "LEASE_MAX_UNITS",
    default: "64",
    description: "the largest lease one Authorize grants (1 = no leases)",
  },
  { name: "LEASE_TTL_MS", default: "1000", description: "how long a gateway may serve from a lease" },
  ...OPERATOR_ENV,
  {
    name: "API_KEY_PEPPER",
    required: true,
    secret: true,
    description:
      "HMAC pepper for key hashes (16+ characters; 32 random bytes); changing it invalidates every key",
  },
  ...meshCallerRows(["gateway"], ["dashboard"]),
]);
