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
import { createSettlementEvents, type SettlementEvents } from "./adapters/events.ts";
import { connectRedis, type Redis } from "./adapters/redis.ts";
import type { PaymentVerifierConfig } from "./config.ts";
import { createFacilitator, FacilitatorUnavailableError } from "./facilitator.ts";
import { createPaymentMetrics } from "./metrics.ts";
import { Payments } from "./payments.ts";
import {
  MemoryReservationStore,
  RedisPendingSettlementStore,
  RedisReservationStore,
  type ReservationStore,
} from "./reservations.ts";
import { X402ExactScheme } from "./schemes/x402-exact.ts";

export const SERVICE_NAME = "tollgate.payment.v1.PaymentVerifierService";

export interface PaymentVerifierDeps {
  logger?: Logger;
  registry?: Registry;
  /** Isolates the settlement event subjects and streams on a shared NATS server (tests). */
  eventsNamespace?: string;
  events?: SettlementEvents;
  reservations?: ReservationStore;
}

export interface PaymentVerifierHandle {
  grpcPort: number;
  metricsPort: number;
  registry: Registry;
  /** "redis", or "memory" when Redis was unreachable at startup. */
  reservationStore: ReservationStore["kind"];
  /** Settlement events not yet acknowledged by JetStream. */
  pendingEvents(): number;
  stop(): Promise<void>;
}

async function openRedis(config: PaymentVerifierConfig, logger: Logger): Promise<Redis | undefined> {
  let redis = await connectRedis(config.redisUrl, logger);
  if (!redis && config.redisStandin) {
    logger.warn(
      `Redis is unreachable at ${redactUrl(config.redisUrl)}: payment reservations are kept in memory (single node only)`,
    );
  } else if (!redis) {
    // Not serving (no gRPC server yet, so probes fail) beats serving without the replay guard.
    logger.warn(
      `Redis is unreachable at ${redactUrl(config.redisUrl)}: waiting for it (REDIS_STANDIN=false)`,
    );
    for (let attempt = 1; !redis; attempt++) {
      await new Promise((r) => setTimeout(r, Math.min(250 * attempt, 5_000)));
      redis = await connectRedis(config.redisUrl, logger);
    }
    logger.info("Redis reachable: payment reservations are shared");
  }
  return redis;
}

export async function startPaymentVerifier(
  config: PaymentVerifierConfig,
  deps: PaymentVerifierDeps = {},
): Promise<PaymentVerifierHandle> {
  const logger = deps.logger ?? createLogger("payment-verifier");
  const registry = deps.registry ?? createRegistry("payment-verifier");

  // Redis is decided once, at startup: reachable, or a single-node stand-in for the process's life.
  const redis = deps.reservations ? undefined : await openRedis(config, logger);
  const reservations =
    deps.reservations ??
    (redis ? new RedisReservationStore(redis, config.redisPrefix) : new MemoryReservationStore());
  const pendingSettlements = redis ? new RedisPendingSettlementStore(redis, config.redisPrefix) : undefined;

  const facilitator = createFacilitator(config.facilitator, config.x402.network, logger, pendingSettlements);
  const exact = new X402ExactScheme(config.x402, facilitator.client, logger, registry);
  try {
    await exact.init();
  } catch (err) {
    // An unreachable facilitator is retried on demand; a facilitator without our network is fatal.
    if (!(err instanceof FacilitatorUnavailableError)) {
      await reservations.close();
      throw err;
    }
    logger.warn({ err: err.message }, "x402 facilitator unreachable at startup; retrying on demand");
  }

  const events =
    deps.events ??
    createSettlementEvents({
      natsUrl: config.natsUrl,
      outboxDir: config.outboxDir,
      logger,
      registry,
      ...(deps.eventsNamespace ? { namespace: deps.eventsNamespace } : {}),
    });
  const payments = new Payments({
    schemes: [exact],
    reservations,
    events,
    metrics: createPaymentMetrics(registry),
    logger,
    reservationTtlMs: config.reservationTtlSeconds * 1000,
  });

  const grpcServer = await startGrpcServer({
    host: config.host,
    port: config.grpcPort,
    services: [
      {
        name: SERVICE_NAME,
        definition: contracts.paymentVerifier().PaymentVerifierService.service,
        handlers: {
          Challenge: (req) => payments.challenge(req),
          Verify: (req) => payments.verify(req),
          Settle: (req) => payments.settle(req),
          Release: (req) => payments.release(req),
          DescribeMethods: async () => payments.describeMethods(),
        },
        callers: { gateway: ["Challenge", "Verify", "Settle", "Release", "DescribeMethods"] },
      },
    ],
    meshCallers: config.meshCallers,
    registry,
    logger,
  });
  const metricsServer = await serveMetrics(registry, config.metricsPort, config.host);

  return {
    grpcPort: grpcServer.port,
    metricsPort: metricsServer.port,
    registry,
    reservationStore: reservations.kind,
    pendingEvents: () => events.pending(),
    async stop() {
      await grpcServer.shutdown();
      await metricsServer.close();
      await events.close();
      await reservations.close();
      await exact.close();
      await facilitator.close();
    },
  };
}
