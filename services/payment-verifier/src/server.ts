// Wiring: stores (Redis, or single-node stand-ins), the settlement chain reader, facilitators, the
// configured schemes, the scheme-neutral core, and its gRPC face. Nothing here decides a payment.
import {
  batchChannelStorage,
  chainIdOf,
  createFacilitator,
  memoryMppxState,
  redisMppxState,
  undoDeduction,
} from "@tollgate/payment-rails";
import {
  connectRedis,
  contracts,
  createLogger,
  createRegistry,
  type Logger,
  type Redis,
  type Registry,
  redactUrl,
  serveMetrics,
  slotTags,
  startGrpcServer,
} from "@tollgate/platform";
import { localSignerLock, redisSignerLock } from "@tollgate/settlement-signer";
import { createSettlementEvents } from "./adapters/events.ts";
import { createSettlementChain } from "./adapters/settlement-chain.ts";
import { memoizeSignatureRecovery } from "./adapters/signature-memo.ts";
import type { PaymentVerifierConfig } from "./config.ts";
import { createSettlementRecorder, type SettlementSink } from "./core/events.ts";
import { createPaymentMetrics, zeroPaymentMetrics } from "./core/metrics.ts";
import { Payments } from "./core/payments.ts";
import { FacilitatorUnavailableError } from "./core/types.ts";
import { SignInWithX } from "./protocols/sign-in-with-x.ts";
import { buildSchemes } from "./schemes/registry.ts";
import { SDK_SCHEME } from "./schemes/x402-batch-credential.ts";
import { MemoryAnswerStore } from "./stores/answers.ts";
import { RedisAnswerStore } from "./stores/answers-redis.ts";
import { RefusalMemory } from "./stores/attempt-limits.ts";
import { BatchRefundStore } from "./stores/batch-refunds.ts";
import { BatchVoucherStore } from "./stores/batch-vouchers.ts";
import { RedisPendingSettlementStore } from "./stores/pending-settlements.ts";
import type { ReservationStore } from "./stores/reservations.ts";
import { MemoryReservationStore } from "./stores/reservations-memory.ts";
import { RedisReservationStore } from "./stores/reservations-redis.ts";
import { MemorySignInNonceStore, RedisSignInNonceStore } from "./stores/sign-in-nonces.ts";
import { grpcHandlers } from "./transport.ts";

const SERVICE_NAME = "tollgate.payment.v1.PaymentVerifierService";

export interface PaymentVerifierDeps {
  logger?: Logger;
  registry?: Registry;
  /** Isolates the settlement event subjects and streams on a shared NATS server (tests). */
  eventsNamespace?: string;
  /** Where settlement events go instead of the outbox (tests). */
  events?: SettlementSink & { pending?(): number; close?(): Promise<void> };
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
  /** Health checks go NOT_SERVING; calls are still served. */
  drain(): void;
  stop(): Promise<void>;
}

/** Redis, decided once at startup: reachable, a single-node stand-in (REDIS_STANDIN), or waited for. */
async function openRedis(config: PaymentVerifierConfig, logger: Logger): Promise<Redis | undefined> {
  const redis = await connectRedis({
    url: config.redisUrl,
    clusterNodes: config.redisClusterNodes,
    logger,
    // Without the stand-in, not serving (no gRPC server yet, so probes fail) beats serving without
    // the shared replay guard.
    unreachable: config.redisStandIn ? "give-up" : "wait",
  });
  if (!redis) {
    logger.warn(
      `Redis is unreachable at ${redactUrl(config.redisUrl)}: payment reservations are kept in memory (single node only)`,
    );
  }
  return redis;
}

export async function startPaymentVerifier(
  config: PaymentVerifierConfig,
  deps: PaymentVerifierDeps = {},
): Promise<PaymentVerifierHandle> {
  const logger = deps.logger ?? createLogger("payment-verifier");
  memoizeSignatureRecovery();
  const registry = deps.registry ?? createRegistry("payment-verifier");
  const metrics = createPaymentMetrics(registry);

  // Redis is decided once, at startup: reachable, or single-node stand-ins for the process's life.
  const redis = deps.reservations ? undefined : await openRedis(config, logger);
  const reservations =
    deps.reservations ??
    (redis ? new RedisReservationStore(redis, config.redisPrefix) : new MemoryReservationStore());

  const { x402 } = config;
  // The facilitator knows x402's scheme names; the metrics know ours (batch-settlement is x402-batch).
  const schemeLabel = (scheme: string) => (scheme === SDK_SCHEME ? "x402-batch" : scheme);
  const facilitator = createFacilitator(x402.facilitator, x402.network, {
    logger,
    onReverted: (scheme, feeWei) => {
      const label = { scheme: schemeLabel(scheme) };
      metrics.settlementsReverted.inc(label);
      metrics.revertedFeesWei.inc(label, Number(feeWei));
      logger.warn(
        { ...label, feeWei: feeWei.toString() },
        "a settlement transaction reverted: gas paid, nothing collected",
      );
    },
    onWithheld: (scheme, reason) => metrics.settlementsWithheld.inc({ scheme: schemeLabel(scheme), reason }),
    ...(redis ? { pendingSettlementStore: new RedisPendingSettlementStore(redis, config.redisPrefix) } : {}),
    signerLock: redis
      ? redisSignerLock(redis, config.redisPrefix, {
          busy: (m) => new FacilitatorUnavailableError(m),
          tag: slotTags(redis),
        })
      : localSignerLock(),
  });
  const settlementChain = x402.settlementRpcUrl
    ? createSettlementChain({
        rpcUrl: x402.settlementRpcUrl,
        chainId: chainIdOf(x402.network),
        timeoutMs: 10_000,
        lookbackBlocks: x402.lookbackBlocks,
      })
    : undefined;
  // x402-batch channel state: shared through Redis by every replica and the settlement worker. The
  // in-memory stand-in would keep vouchers the worker never sees (never claimed, lost on restart):
  // without Redis the scheme is not offered at all.
  const withoutBatch = !redis && config.schemes.includes("x402-batch");
  if (withoutBatch) {
    logger.warn(
      "x402-batch is not offered: its channel state must be in Redis, shared with the settlement worker that claims it, and this process runs on the in-memory stand-in (REDIS_STANDIN=true)",
    );
  }
  const channelsPrefix = `${config.redisPrefix}channels:`;
  const channelStorage = redis ? batchChannelStorage(redis, channelsPrefix) : undefined;
  // The same records, one script per step, for vouchers on known channels (the hot path).
  const batchVouchers = redis ? new BatchVoucherStore(redis, channelsPrefix) : undefined;
  // Refund requests on those records, sent by the settlement worker (its claim lease, its outcomes).
  const batchRefunds = redis
    ? new BatchRefundStore(redis, channelsPrefix, config.redisPrefix, config.x402.batchRefunds)
    : undefined;
  // MPP replay claims and session channels: shared by every replica and the session settlement loop.
  const mppState = redis
    ? redisMppxState(redis, `${config.redisPrefix}mpp:`, undefined, {
        // A session Settle answered failed whose deduction landed after all is given back.
        undo: undoDeduction,
        report: (outcome, channel) => {
          if (outcome === "undone")
            logger.info({ channel }, "mpp-session deduction of a failed Settle landed: given back");
          else if (outcome === "kept")
            logger.warn(
              { channel },
              "mpp-session deduction of a failed Settle landed and could not be given back (channel settled on chain, closing or finalized since)",
            );
          else
            logger.error(
              { channel },
              "mpp-session deduction of a failed Settle: outcome unknown (Redis away past 30 s); the channel may hold one price too many",
            );
        },
      })
    : memoryMppxState();
  // Sign-in-with-x on the settlement chain (where a smart wallet's signature is read); its used
  // nonces shared like reservations. Attempts count against the same per-client limit as payments.
  const signInNonces = redis
    ? new RedisSignInNonceStore(redis, config.redisPrefix)
    : new MemorySignInNonceStore();
  const signIn = new SignInWithX({
    chains: [x402.network],
    nonces: signInNonces,
    countAttempt: async (client) => {
      const checks = [{ scope: "client", id: client, limit: config.limits.perClient }];
      const scope = await reservations.countAttempt({ checks, nowMs: Date.now() });
      if (scope) metrics.attemptsLimited.inc({ scope });
      return scope;
    },
    ...(settlementChain ? { evmVerifier: (args) => settlementChain.verifyMessage(args) } : {}),
    observe: (outcome, seconds) => metrics.signInSeconds.observe({ outcome }, seconds),
  });
  const offered = withoutBatch ? config.schemes.filter((s) => s !== "x402-batch") : config.schemes;
  const schemes = buildSchemes(
    { ...config, schemes: offered },
    {
      logger,
      metrics,
      x402Facilitators: [facilitator],
      settlementChain,
      channelStorage,
      batchVouchers,
      batchRefunds,
      mppState,
      penalties: reservations,
      signIn,
    },
  );
  zeroPaymentMetrics(
    metrics,
    schemes.map((s) => s.name),
  );
  const closeAll = async () => {
    for (const s of schemes) await s.close();
    await facilitator.close();
    await settlementChain?.close();
    signInNonces.close();
    await reservations.close();
  };
  for (const scheme of schemes) {
    try {
      await scheme.init();
    } catch (err) {
      // An unreachable facilitator is retried on demand; a facilitator without our network is fatal.
      if (!(err instanceof FacilitatorUnavailableError)) {
        await closeAll();
        throw err;
      }
      logger.warn(
        { scheme: scheme.name, err: err.message },
        "payment facilitator unreachable at startup; retrying on demand",
      );
    }
  }

  const events =
    deps.events ??
    createSettlementEvents({
      natsUrl: config.natsUrl,
      ...(config.streamReplicas ? { streamReplicas: config.streamReplicas } : {}),
      outboxDir: config.outboxDir,
      logger,
      registry,
      namespace: deps.eventsNamespace ?? config.eventsNamespace ?? "",
    });
  const payments = new Payments({
    schemes,
    reservations,
    refusals: new RefusalMemory({ max: 10_000, ttlMs: config.limits.refusalMemorySeconds * 1000 }),
    limits: config.limits,
    events: createSettlementRecorder(events, logger),
    metrics,
    logger,
    reservationTtlMs: config.reservationTtlSeconds * 1000,
    // x402 payment-identifier retries: first answers where the reservations are (shared by replicas).
    answers: {
      store: redis ? new RedisAnswerStore(redis, config.redisPrefix) : new MemoryAnswerStore(),
      maxBytes: config.answers.maxBytes,
      ttlMs: config.answers.ttlSeconds * 1000,
    },
  });
  await payments.start();

  const grpcServer = await startGrpcServer({
    host: config.host,
    port: config.grpcPort,
    services: [
      {
        name: SERVICE_NAME,
        definition: contracts.paymentVerifier().PaymentVerifierService.service,
        handlers: grpcHandlers(payments, signIn),
        callers: {
          gateway: [
            "Challenge",
            "Verify",
            "Settle",
            "Release",
            "DescribeMethods",
            "KeepAnswer",
            "VerifySignIn",
          ],
        },
        // The gateway's calls of a paid request travel as messages on its open streams.
        exchange: "Exchange",
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
    drain: () => grpcServer.drain(),
    registry,
    reservationStore: reservations.kind,
    pendingEvents: () => events.pending?.() ?? 0,
    async stop() {
      await grpcServer.shutdown();
      payments.close();
      await metricsServer.close();
      await events.close?.();
      await closeAll();
    },
  };
}
