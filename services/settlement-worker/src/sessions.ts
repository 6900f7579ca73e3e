// Wiring of the MPP session settlement loop (adapters/session-channels.ts): payment-verifier's
// Redis state (same REDIS_URL and REDIS_PREFIX), the Tempo chain with the channels'
// operator key, a lease so one replica settles, and the channel_settled events' outbox. Redis is
// retried in the background until it answers: channels wait in it, nothing is lost meanwhile.
import { createEventPublisher, SETTLEMENT_V2 } from "@tollgate/events";
import { tempoClient } from "@tollgate/payment-verifier/adapters/tempo";
import { redisMppxState } from "@tollgate/payment-verifier/stores/mppx-store";
import { connectRedis, type Logger, type Redis, type Registry } from "@tollgate/platform";
import { privateKeyToAccount } from "viem/accounts";
import { redisLease } from "./adapters/lease.ts";
import { type SessionSettlement, startSessionSettlement } from "./adapters/session-channels.ts";
import type { SessionSettlementConfig } from "./config.ts";
import type { WorkerMetrics } from "./core/metrics.ts";

export interface SessionsHandle {
  /** The running loop, once Redis answered (tests drive its ticks). */
  settlement(): SessionSettlement | undefined;
  stop(): Promise<void>;
}

export function startSessions(
  config: SessionSettlementConfig,
  deps: {
    logger: Logger;
    registry: Registry;
    metrics: WorkerMetrics;
    eventsNamespace: string;
    natsUrl: string;
  },
): SessionsHandle {
  for (const reason of ["amount", "age", "close_requested"])
    deps.metrics.sessionSettles.inc({ reason, result: "settled" }, 0);
  deps.metrics.sessionSettles.inc({ reason: "error", result: "failed" }, 0);
  deps.metrics.sessionLeaseHeld.set(0);
  const events = createEventPublisher({
    natsUrl: deps.natsUrl,
    service: "settlement-worker",
    outboxDir: config.outboxDir,
    logger: deps.logger,
    registry: deps.registry,
    ...(deps.eventsNamespace ? { namespace: deps.eventsNamespace } : {}),
  });
  const account = privateKeyToAccount(config.serverKey);
  let redis: Redis | undefined;
  let settlement: SessionSettlement | undefined;
  let stopped = false;
  let warned = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async () => {
    redis = await connectRedis({ url: config.redisUrl, logger: deps.logger, unreachable: "give-up" });
    if (stopped) return redis?.destroy();
    if (!redis) {
      if (!warned) deps.logger.warn("Redis is unreachable: MPP session channels are settled once it answers");
      warned = true;
      retry = setTimeout(() => void connect(), 5_000);
      return;
    }
    if (warned) deps.logger.info("Redis reachable: settling MPP session channels");
    const prefix = `${config.redisPrefix}mpp:`;
    settlement = startSessionSettlement({
      state: redisMppxState(redis, prefix),
      client: tempoClient({ rpcUrl: config.rpcUrl, chainId: config.chainId, account }),
      account,
      feeToken: config.feeToken,
      schedule: config.settle,
      lease: redisLease(redis, `${prefix}settlement-lease`, config.leaseMs),
      publish: (event) => events.publish(SETTLEMENT_V2, event),
      logger: deps.logger,
      metrics: deps.metrics,
    });
  };
  void connect();
  return {
    settlement: () => settlement,
    async stop() {
      stopped = true;
      clearTimeout(retry);
      await settlement?.stop();
      await events.close();
      redis?.destroy();
    },
  };
}
