import { openDatabase, startMigrations } from "@tollgate/db";
import { createEventConsumer, createEventPublisher } from "@tollgate/events";
import {
  contracts,
  createLogger,
  createRegistry,
  type Logger,
  type Registry,
  redactUrl,
  serveMetrics,
  startGrpcServer,
} from "@tollgate/platform";
import { createAccountHandlers } from "./account.ts";
import { createAdminHandlers } from "./admin.ts";
import { type QuotaMeterConfig, SERVICE } from "./config.ts";
import { CREDIT_SWEEP_MS, createCredits } from "./credits.ts";
import { MIGRATIONS } from "./db/migrations.ts";
import { createRecords, type Records } from "./db/records.ts";
import type { QuotaTables } from "./db/schema.ts";
import { KeySnapshot } from "./key-snapshot.ts";
import { createKeyHasher } from "./keys.ts";
import { createMeter } from "./meter.ts";
import { createQuotaMetrics, type QuotaMetrics } from "./metrics.ts";
import { describePlans, planBook } from "./plans.ts";
import { startRollups } from "./rollups.ts";
import { type SeedStats, startSeeder } from "./seeder.ts";
import { MemoryStore } from "./store/memory-store.ts";
import { openRedisStore } from "./store/redis-store.ts";
import type { QuotaStore } from "./store/types.ts";
import { startTopUpRepair } from "./top-up-repair.ts";
import { createUsage } from "./usage.ts";

export interface QuotaMeterDeps {
  /** The clock (ms since epoch); tests inject one to cross day and month boundaries. */
  now?: () => number;
  logger?: Logger;
  registry?: Registry;
  /** Told each time this replica re-seeds the Redis copy from PostgreSQL (tests). */
  onSeeded?: (stats: SeedStats) => void;
}

export interface QuotaMeterHandle {
  grpcPort: number;
  metricsPort: number;
  /** "redis", or "memory" when the stand-in is in use. */
  storeKind: "redis" | "memory";
  /** Health checks go NOT_SERVING; calls are still served. */
  drain(): void;
  stop(): Promise<void>;
}

async function openStore(
  config: QuotaMeterConfig,
  logger: Logger,
  metrics: QuotaMetrics,
  now: () => number,
): Promise<QuotaStore> {
  const redis = await openRedisStore({
    url: config.redisUrl,
    clusterNodes: config.redisClusterNodes,
    prefix: config.redisPrefix,
    logger,
    latency: metrics.redisLatency,
    connectTimeoutMs: config.redisConnectTimeoutMs,
    giveUp: config.redisStandIn,
  });
  if (redis) return redis;
  logger.warn(
    `Redis is unreachable at ${redactUrl(config.redisUrl)}: using the in-memory ` +
      "single-node store (accounts, keys and counters live in this process only and are lost on restart)",
  );
  return new MemoryStore(now);
}

/**
 * Keeps the fail-open snapshot of valid keys fresh, from PostgreSQL: it holds every key even
 * while Redis is away, and a replica started during a Redis outage knows them too.
 */
function startSnapshotRefresh(
  records: Records,
  snapshot: KeySnapshot,
  metrics: QuotaMetrics,
  everyMs: number,
  logger: Logger,
) {
  let running = false;
  const refresh = async () => {
    if (running) return;
    running = true;
    const since = snapshot.mark();
    try {
      snapshot.replace(await records.knownKeys(), since);
      metrics.snapshotKeys.set(snapshot.size);
    } catch (err) {
      logger.warn({ err }, "could not refresh the key snapshot; keeping the previous one");
    } finally {
      running = false;
    }
  };
  void refresh();
  const timer = setInterval(() => void refresh(), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** A gRPC deadline as ms since epoch (Infinity: none). */
function deadlineMs(d: Date | number): number {
  return d instanceof Date ? d.getTime() : d;
}

/** Starts quota-meter: gRPC (meter + admin), /metrics, the usage consumer and the event outbox. */
export async function startQuotaMeter(
  config: QuotaMeterConfig,
  deps: QuotaMeterDeps = {},
): Promise<QuotaMeterHandle> {
  const logger = deps.logger ?? createLogger(SERVICE);
  const registry = deps.registry ?? createRegistry(SERVICE);
  const now = deps.now ?? Date.now;
  const metrics = createQuotaMetrics(registry);
  const hasher = createKeyHasher(config.apiKeyPepper);
  if (!config.operatorToken) logger.warn("OPERATOR_TOKEN is not set: the admin API refuses every call");

  const database = openDatabase<QuotaTables>({
    url: config.databaseUrl,
    logger,
    applicationName: SERVICE,
    maxConnections: config.databasePoolSize,
  });
  const records = createRecords(database.db);
  const migrations = startMigrations(database.db, MIGRATIONS, { logger, where: database.where });
  const store = await openStore(config, logger, metrics, now);
  const snapshot = new KeySnapshot();
  const seeder = startSeeder({
    store,
    records,
    now,
    logger,
    schemaReady: migrations.ready,
    checkEveryMs: config.seedCheckMs,
    ...(deps.onSeeded ? { onSeeded: deps.onSeeded } : {}),
  });
  // Serve once the schema is migrated and the Redis copy checked (seeded if it was lost), or
  // after DATABASE_WAIT_MS without PostgreSQL: Authorize needs only Redis, and admin calls
  // answer UNAVAILABLE until the database is back.
  const waited = await Promise.race([
    migrations.ready.then(() => seeder.check()).then(() => true),
    new Promise<false>((r) => setTimeout(() => r(false), config.databaseWaitMs)),
  ]);
  if (!waited) logger.warn({ database: database.where }, "serving before PostgreSQL answered");
  const stopRefresh = startSnapshotRefresh(records, snapshot, metrics, config.keySnapshotRefreshMs, logger);

  const events = {
    natsUrl: config.natsUrl,
    service: SERVICE,
    logger,
    registry,
    namespace: config.eventsNamespace,
    streamReplicas: config.streamReplicas,
  };
  const publisher = createEventPublisher({ ...events, outboxDir: config.outboxDir });
  const consumer = createEventConsumer({ ...events, quiet: true });

  const meter = createMeter({
    store,
    hasher,
    snapshot,
    now,
    logger,
    metrics,
    budgetMs: config.redisBudgetMs,
    maxWaitMs: config.redisMaxWaitMs,
    cooldownMs: config.failOpenCooldownMs,
    defaultBurst: config.defaultBurstPerSecond,
    lease: { maxUnits: config.leaseMaxUnits, ttlMs: config.leaseTtlMs, dedupeTtlMs: config.usageDedupeTtlMs },
    onCopyLost: () => {
      store.hold(true);
      void seeder.check();
    },
  });
  const usage = createUsage({
    store,
    publisher,
    hasher,
    now,
    logger,
    metrics,
    dedupeTtlMs: config.usageDedupeTtlMs,
    defaultBurst: config.defaultBurstPerSecond,
  });
  const stopRollups = startRollups(consumer, {
    records,
    store,
    metrics,
    logger,
    schemaReady: migrations.ready,
  });

  const closeBackground = async () => {
    clearInterval(creditSweep);
    stopRefresh();
    stopRollups();
    seeder.stop();
    migrations.stop();
    await consumer.close();
    await publisher.close();
    await store.close();
    await database.close();
  };

  const plans = planBook(config);
  const plansStated = describePlans(plans, config.defaultBurstPerSecond);
  const credits = createCredits({ records, store, hasher, plans, metrics, logger, now });
  // What a crash or a Redis blip left between the ledger and the copy, applied within a minute.
  const creditSweep = setInterval(
    () =>
      void migrations.ready
        .then(() => credits.sweep())
        .catch((err: unknown) => logger.warn({ err }, "could not apply owed credits to the copy")),
    CREDIT_SWEEP_MS,
  );
  creditSweep.unref();
  // A settled top-up the gateway did not credit (it crashed, or its call failed) is credited from
  // the settlement stream, under the same settlement id (top-up-repair.ts).
  startTopUpRepair(consumer, { credits, metrics, logger, schemaReady: migrations.ready, now });
  const proto = contracts.quotaMeter();
  let grpcServer: Awaited<ReturnType<typeof startGrpcServer>>;
  let metricsServer: Awaited<ReturnType<typeof serveMetrics>>;
  try {
    grpcServer = await startGrpcServer({
      host: config.host,
      port: config.grpcPort,
      registry,
      logger,
      meshCallers: config.meshCallers,
      services: [
        {
          name: "tollgate.quota.v1.QuotaMeterService",
          definition: proto.QuotaMeterService.service,
          // The dashboard reads a user's own usage (by their key); only the gateway meters.
          // Both show the plans (pricing, docs, the sign-in page): DescribePlans.
          callers: {
            gateway: ["Authorize", "ReportUsage", "GetUsage", "DescribePlans"],
            dashboard: ["GetUsage", "DescribePlans"],
          },
          handlers: {
            Authorize: (req, call) => meter.authorize(req, deadlineMs(call.getDeadline())),
            ReportUsage: (req) => usage.reportUsage(req),
            GetUsage: (req) => usage.getUsage(req),
            DescribePlans: async () => plansStated,
          },
        },
        {
          name: "tollgate.quota.v1.AccountService",
          definition: proto.AccountService.service,
          // Only the dashboard, which verified the user's wallet signature, acts for a user.
          callers: {
            dashboard: [
              "ResolveWalletAccount",
              "ListOwnKeys",
              "CreateOwnKey",
              "RevokeOwnKey",
              "ReplaceOwnKey",
              "GetOwnUsage",
              "GetOwnCredits",
            ],
          },
          handlers: createAccountHandlers({
            records,
            store,
            hasher,
            snapshot,
            now,
            logger,
            plans,
            credits,
            defaultBurst: config.defaultBurstPerSecond,
          }),
        },
        {
          name: "tollgate.quota.v1.CreditService",
          definition: proto.CreditService.service,
          // The gateway credits what payment-verifier settled for a top-up.
          callers: { gateway: ["CreditTopUp"] },
          handlers: { CreditTopUp: (req) => credits.topUp(req) },
        },
        {
          name: "tollgate.quota.v1.QuotaAdminService",
          definition: proto.QuotaAdminService.service,
          // Every admin method checks the operator's token itself (admin.ts).
          callers: null,
          handlers: createAdminHandlers({
            records,
            store,
            hasher,
            snapshot,
            now,
            logger,
            operatorToken: config.operatorToken,
            plans,
            credits,
          }),
        },
      ],
    });
  } catch (err) {
    await closeBackground();
    throw err;
  }
  try {
    metricsServer = await serveMetrics(registry, config.metricsPort, config.host);
  } catch (err) {
    await grpcServer.shutdown();
    await closeBackground();
    throw err;
  }

  let stopping: Promise<void> | undefined;
  return {
    grpcPort: grpcServer.port,
    metricsPort: metricsServer.port,
    drain: () => grpcServer.drain(),
    storeKind: store.kind,
    stop: () => {
      stopping ??= (async () => {
        await grpcServer.shutdown();
        await closeBackground();
        await metricsServer.close();
      })();
      return stopping;
    },
  };
}
