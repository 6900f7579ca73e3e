// Wiring of the x402-batch claimer (core/x402-batch-claimer.ts): the official server scheme over
// the SAME channel records payment-verifier writes (RedisChannelStorage under
// `<REDIS_PREFIX>payment:channels:`), its channel manager over an in-process x402 facilitator with
// the batch-settlement facilitator scheme (libs/payment-rails, as payment-verifier's: the same
// settlement key, nonces shared through the signer lock under the same prefix), the contract reader,
// the claim lease (with its epoch) and the worker's settlement events. Driven by the schedule and
// by the accrual events on JetStream (a durable of its own).
import { type EventConsumer, SETTLEMENT_V2, type SettlementEventV2 } from "@tollgate/events";
import {
  batchChannelStorage,
  type Caip2,
  createFacilitator,
  FacilitatorUnavailableError,
  refundKeys,
} from "@tollgate/payment-rails";
import { type Logger, type Redis, slotTags } from "@tollgate/platform";
import { redisSignerLock } from "@tollgate/settlement-signer";
import { BatchSettlementEvmScheme, type Channel } from "@x402/evm/batch-settlement/server";
import { privateKeyToAccount } from "viem/accounts";
import type { BackgroundRedis } from "./adapters/background-redis.ts";
import { redisLease } from "./adapters/lease.ts";
import { type BatchChain, createBatchChain, ESCROW } from "./adapters/x402-batch-chain.ts";
import { redisRefundRequests, refundSender } from "./adapters/x402-batch-refunds.ts";
import type { X402BatchClaimConfig } from "./config.ts";
import type { WorkerMetrics } from "./core/metrics.ts";
import {
  type Claimer,
  type ClaimerObserver,
  type ClaimerPorts,
  createClaimer,
  type Intent,
} from "./core/x402-batch-claimer.ts";
import type { ChannelRecord } from "./core/x402-batch-claims.ts";

/** The accrual events' durable: every replica shares it; an accrual nudges the claimer. */
const ACCRUALS_DURABLE = "settlement-worker-x402-batch-accruals";

export interface X402BatchHandle {
  /** The claimer, once Redis answered (tests drive its passes). */
  claimer(): Claimer | undefined;
  stop(): Promise<void>;
}

function observer(metrics: WorkerMetrics, log: Logger, chain: BatchChain): ClaimerObserver {
  for (const reason of ["withdrawal", "amount", "interval"]) metrics.batchClaims.inc({ reason }, 0);
  for (const operation of ["claim", "settle", "refund", "pass"]) metrics.batchFailures.inc({ operation }, 0);
  for (const reason of ["idle", "requested"]) metrics.batchRefunds.inc({ reason }, 0);
  metrics.batchLeaseHeld.set(0);
  return {
    leaseHeld: (held) => metrics.batchLeaseHeld.set(held ? 1 : 0),
    unclaimed(amount, unconfirmed) {
      metrics.batchUnclaimed.set(Number(amount));
      metrics.batchUnconfirmed.set(unconfirmed);
    },
    claimed(vouchers, reason) {
      metrics.batchClaims.inc({ reason });
      metrics.batchClaimedVouchers.inc(vouchers);
      log.info({ vouchers, reason }, "x402-batch vouchers claimed");
    },
    settled() {
      metrics.batchSettles.inc();
      log.info("x402-batch claims settled to the receiver");
    },
    refunded(reason, transaction) {
      metrics.batchRefunds.inc({ reason });
      log.info({ reason, transaction }, "x402-batch channel refunded");
      // Its gas is ours: counted from the receipt, off the pass (a lost read is logged, not retried).
      chain.spent(transaction).then(
        ({ gas, feeWei }) => {
          metrics.batchRefundGas.inc({ reason }, Number(gas));
          metrics.batchRefundFees.inc({ reason }, Number(feeWei));
        },
        (err: unknown) =>
          log.warn(
            { transaction, err: err instanceof Error ? err.message : String(err) },
            "x402-batch refund's gas not counted: its receipt could not be read",
          ),
      );
    },
    recovered(events) {
      metrics.batchReconciled.inc(events);
      log.warn({ events }, "x402-batch events journaled from the chain for an operation left open");
    },
    failed(operation, err) {
      metrics.batchFailures.inc({ operation });
      log.warn(
        { operation, err: err instanceof Error ? err.message : String(err) },
        "x402-batch operation failed",
      );
    },
  };
}

/** Open intents: one hash in Redis (field = intent id), shared by the replicas like the lease. */
function redisIntents(redis: Redis, key: string): ClaimerPorts["intents"] {
  return {
    open: async (intent) => void (await redis.hSet(key, intent.id, JSON.stringify(intent))),
    close: async (id) => void (await redis.hDel(key, id)),
    list: async () => Object.values(await redis.hGetAll(key)).map((v) => JSON.parse(v) as Intent),
  };
}

export function startX402Batch(
  config: X402BatchClaimConfig,
  deps: {
    logger: Logger;
    metrics: WorkerMetrics;
    redis: BackgroundRedis;
    redisPrefix: string;
    consumer: EventConsumer;
    publish(event: SettlementEventV2): void;
  },
): X402BatchHandle {
  const log = deps.logger.child({ component: "x402-batch-claims" });
  const { network, asset, payTo, rpcUrl } = config.chain;
  const chain = createBatchChain(rpcUrl, payTo, asset);
  const observe = observer(deps.metrics, log, chain);
  const authorizer = privateKeyToAccount(config.authorizerKey);
  let claimer: Claimer | undefined;
  let close: (() => Promise<void>) | undefined;
  let stopped = false;
  deps.redis.onReady((redis) => {
    if (stopped) return;
    // The same storage as payment-verifier's: an update whose answer was lost is read back.
    const channelsPrefix = `${deps.redisPrefix}channels:`;
    const storage = batchChannelStorage(redis, channelsPrefix);
    const scheme = new BatchSettlementEvmScheme(payTo, {
      storage,
      receiverAuthorizerSigner: authorizer,
      withdrawDelay: config.withdrawDelaySeconds,
    });
    const facilitator = createFacilitator(config.facilitator, network as Caip2, {
      logger: log,
      signerLock: redisSignerLock(redis, deps.redisPrefix, {
        tag: slotTags(redis),
        busy: (m) => new FacilitatorUnavailableError(m),
      }),
    });
    const manager = scheme.createChannelManager(facilitator.client, network as Caip2, asset);
    claimer = createClaimer(
      {
        channels: {
          list: async () => (await storage.list()) as ChannelRecord[],
          async raiseClaimed(channelId, totalClaimed) {
            await storage.updateChannel(channelId, (current) =>
              current && BigInt(current.totalClaimed) < totalClaimed
                ? { ...current, totalClaimed: String(totalClaimed) }
                : current,
            );
          },
        },
        chain,
        manager: {
          claim: (ids, confirmed) => {
            const wanted = new Set(ids.map((id) => id.toLowerCase()));
            return manager.claim({
              maxClaimsPerBatch: config.maxClaimsPerBatch,
              selectClaimChannels: (channels: Channel[]) =>
                channels.filter((c) => {
                  const id = c.channelId.toLowerCase();
                  const balance = confirmed.get(id);
                  return (
                    wanted.has(id) && balance !== undefined && BigInt(c.chargedCumulativeAmount) <= balance
                  );
                }),
            });
          },
          settle: () => manager.settle(),
          async refund(channelId) {
            const [refunded] = await manager.refund([channelId]);
            return refunded;
          },
          refundRequested: refundSender({
            facilitator: facilitator.client,
            authorizer,
            network: network as Caip2,
            asset,
            payTo,
          }),
        },
        refunds: redisRefundRequests(redis, channelsPrefix, deps.redisPrefix),
        // payment-verifier takes refund requests only while this lease is held.
        lease: redisLease(redis, refundKeys(deps.redisPrefix).claimLease, config.leaseMs, slotTags(redis)),
        intents: redisIntents(redis, `${deps.redisPrefix}x402-batch:intents`),
        publish: deps.publish,
      },
      { policy: config.policy, network, asset, escrow: ESCROW },
      observe,
    );
    claimer.start(config.tickMs);
    claimer.nudge();
    close = async () => {
      await claimer?.stop();
      await facilitator.close();
    };
  });
  deps.consumer.consume(
    SETTLEMENT_V2,
    ACCRUALS_DURABLE,
    async (event) => {
      if (event.outcome === "accrued" && event.scheme === "x402-batch")
        claimer?.accrued(BigInt(event.amount));
    },
    { ackWaitMs: 10_000, retryDelayMs: 1_000 },
  );
  return {
    claimer: () => claimer,
    async stop() {
      stopped = true;
      await close?.();
    },
  };
}
