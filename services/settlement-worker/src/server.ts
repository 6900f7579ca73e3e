// Wiring: PostgreSQL (migrated at start-up), the settlement stream into the ledger, the settlement
// chain reader, the admin gRPC API, /metrics, and the channel loops: MPP session settlement
// (sessions.ts) and x402-batch claims (x402-batch.ts), over payment-verifier's Redis, their events
// through one outbox.
// Channel loops: core/ for their rules, adapters/ for the chain and the stores, started below.
import { openDatabase, startMigrations } from "@tollgate/db";
import {
  createEventConsumer,
  createEventPublisher,
  SETTLEMENT_V2,
  type SettlementEventV2,
} from "@tollgate/events";
import {
  contracts,
  createLogger,
  createRegistry,
  type Logger,
  type Registry,
  serveMetrics,
  startGrpcServer,
} from "@tollgate/platform";
import { createAccountHandlers } from "./account.ts";
import { backgroundRedis } from "./adapters/background-redis.ts";
import { createSettlementChain } from "./adapters/chain.ts";
import { consumeSettlements } from "./adapters/events.ts";
import { createLedgerStore, type LedgerStore, type LedgerTables } from "./adapters/ledger-store.ts";
import { createAdminHandlers } from "./admin.ts";
import { SERVICE, type SettlementWorkerConfig } from "./config.ts";
import { createWorkerMetrics } from "./core/metrics.ts";
import { MIGRATIONS } from "./migrations.ts";
import { type SessionsHandle, startSessions } from "./sessions.ts";
import { startX402Batch, type X402BatchHandle } from "./x402-batch.ts";

export interface SettlementWorkerDeps {
  logger?: Logger;
  registry?: Registry;
}

export interface SettlementWorkerHandle {
  grpcPort: number;
  metricsPort: number;
  /** Resolves once the schema is migrated. */
  ready: Promise<void>;
  /** The MPP session settlement loop, when configured. */
  sessions: SessionsHandle | undefined;
  /** Health checks go NOT_SERVING; calls are still served. */
  drain(): void;
  /** The x402-batch claimer, when configured. */
  x402Batch: X402BatchHandle | undefined;
  stop(): Promise<void>;
}

/**
 * Released samples past their retention are deleted once the schema is ready and then every hour,
 * by every replica (a delete finds nothing the second time); a failure waits for the next hour.
 */
function pruneReleasedHourly(ledger: LedgerStore, schemaReady: Promise<void>, logger: Logger) {
  const prune = () =>
    ledger.pruneReleased().then(
      (n) => n > 0 && logger.info({ rows: n }, "released calls past their retention deleted"),
      (err: unknown) => logger.warn({ err }, "pruning released calls failed; retried in an hour"),
    );
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  schemaReady.then(
    () => {
      if (stopped) return;
      void prune();
      timer = setInterval(prune, 3_600_000).unref();
    },
    () => undefined,
  );
  return {
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}

export async function startSettlementWorker(
  config: SettlementWorkerConfig,
  deps: SettlementWorkerDeps = {},
): Promise<SettlementWorkerHandle> {
  const logger = deps.logger ?? createLogger(SERVICE);
  const registry = deps.registry ?? createRegistry(SERVICE);
  const metrics = createWorkerMetrics(registry);
  if (!config.operatorToken) logger.warn("OPERATOR_TOKEN is not set: the admin API refuses every call");
  if (!config.chain) logger.info("no settlement chain configured: reconciliation is unavailable");

  const database = openDatabase<LedgerTables>({
    url: config.databaseUrl,
    logger,
    applicationName: SERVICE,
    maxConnections: config.databasePoolSize,
  });
  const migrations = startMigrations(database.db, MIGRATIONS, { logger, where: database.where });
  const ledger = createLedgerStore(database.db, config.released);
  // Serve once the schema is migrated, or after DATABASE_WAIT_MS without PostgreSQL (events wait
  // in the stream; admin calls answer UNAVAILABLE until the database is back).
  const migrated = await Promise.race([
    migrations.ready.then(() => true),
    new Promise<false>((r) => setTimeout(() => r(false), config.databaseWaitMs)),
  ]);
  if (!migrated) logger.warn({ database: database.where }, "serving before PostgreSQL answered");
  const consumer = createEventConsumer({
    natsUrl: config.natsUrl,
    service: SERVICE,
    logger,
    registry,
    namespace: config.eventsNamespace,
    streamReplicas: config.streamReplicas,
  });
  consumeSettlements(consumer, ledger, metrics, migrations.ready);
  const pruning = pruneReleasedHourly(ledger, migrations.ready, logger);
  const channels = config.sessions || config.x402Batch;
  const redis = channels ? backgroundRedis(config.redisUrl, logger, config.redisClusterNodes) : undefined;
  const events = channels
    ? createEventPublisher({
        natsUrl: config.natsUrl,
        service: SERVICE,
        outboxDir: config.outboxDir,
        logger,
        registry,
        ...(config.eventsNamespace ? { namespace: config.eventsNamespace } : {}),
      })
    : undefined;
  const publish = (event: SettlementEventV2) => events?.publish(SETTLEMENT_V2, event);
  const sessions =
    config.sessions && redis
      ? startSessions(config.sessions, { logger, metrics, redis, redisPrefix: config.redisPrefix, publish })
      : undefined;
  const x402Batch =
    config.x402Batch && redis
      ? startX402Batch(config.x402Batch, {
          logger,
          metrics,
          redis,
          redisPrefix: config.redisPrefix,
          consumer,
          publish,
        })
      : undefined;

  const closeBackground = async () => {
    pruning.stop();
    await sessions?.stop();
    await x402Batch?.stop();
    redis?.close();
    await events?.close();
    migrations.stop();
    await consumer.close();
    await database.close();
  };
  let grpcServer: Awaited<ReturnType<typeof startGrpcServer>>;
  let metricsServer: Awaited<ReturnType<typeof serveMetrics>>;
  try {
    grpcServer = await startGrpcServer({
      host: config.host,
      port: config.grpcPort,
      registry,
      logger,
      // The dashboard may list its users' own payments; everything else is the operator's.
      meshCallers: config.meshCallers,
      services: [
        {
          name: "tollgate.settlement.v1.SettlementAccountService",
          definition: contracts.settlementWorker().SettlementAccountService.service,
          callers: { dashboard: ["ListOwnPayments"] },
          handlers: createAccountHandlers({ ledger, logger }),
        },
        {
          name: "tollgate.settlement.v1.SettlementAdminService",
          definition: contracts.settlementWorker().SettlementAdminService.service,
          // Every admin method checks the operator's token itself (admin.ts).
          callers: null,
          handlers: createAdminHandlers({
            ledger,
            chain: config.chain
              ? { config: config.chain, reader: createSettlementChain(config.chain.rpcUrl) }
              : undefined,
            metrics,
            logger,
            operatorToken: config.operatorToken,
          }),
        },
      ],
    });
    metricsServer = await serveMetrics(registry, config.metricsPort, config.host);
  } catch (err) {
    await closeBackground();
    throw err;
  }

  let stopping: Promise<void> | undefined;
  return {
    grpcPort: grpcServer.port,
    metricsPort: metricsServer.port,
    drain: () => grpcServer.drain(),
    ready: migrations.ready,
    sessions,
    x402Batch,
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
