// Wiring of the MPP session settlement loop (adapters/session-channels.ts): payment-verifier's
// Redis state (same REDIS_URL and REDIS_PREFIX), the Tempo chain with the channels'
// operator key, a lease so one replica settles, and the worker's settlement events.
import type { SettlementEventV2 } from "@tollgate/events";
import { redisMppxState, tempoClient } from "@tollgate/payment-rails";
import { type Logger, slotTags } from "@tollgate/platform";
import { privateKeyToAccount } from "viem/accounts";
import type { BackgroundRedis } from "./adapters/background-redis.ts";
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
    metrics: WorkerMetrics;
    redis: BackgroundRedis;
    redisPrefix: string;
    publish(event: SettlementEventV2): void;
  },
): SessionsHandle {
  for (const reason of ["amount", "age", "close_requested"])
    deps.metrics.sessionSettles.inc({ reason, result: "settled" }, 0);
  deps.metrics.sessionSettles.inc({ reason: "error", result: "failed" }, 0);
  deps.metrics.sessionLeaseHeld.set(0);
  const account = privateKeyToAccount(config.serverKey);
  let settlement: SessionSettlement | undefined;
  let stopped = false;
  deps.redis.onReady((redis) => {
    if (stopped) return;
    const prefix = `${deps.redisPrefix}mpp:`;
    settlement = startSessionSettlement({
      state: redisMppxState(redis, prefix),
      client: tempoClient({ rpcUrl: config.rpcUrl, chainId: config.chainId, account }),
      account,
      feeToken: config.feeToken,
      schedule: config.settle,
      lease: redisLease(redis, `${prefix}settlement-lease`, config.leaseMs, slotTags(redis)),
      publish: deps.publish,
      logger: deps.logger,
      metrics: deps.metrics,
    });
  });
  return {
    settlement: () => settlement,
    async stop() {
      stopped = true;
      await settlement?.stop();
    },
  };
}
