import type { EventConsumer, EventPublisher, UsageEventV1 } from "@tollgate/events";
import { USAGE_V1 } from "@tollgate/events";
import { grpc, type Logger, ServiceError } from "@tollgate/platform";
import type { GetUsageRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/GetUsageRequest";
import type { GetUsageResponse } from "@tollgate/platform/generated/tollgate/quota/v1/GetUsageResponse";
import type { ReportUsageRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/ReportUsageRequest";
import type { ReportUsageResponse } from "@tollgate/platform/generated/tollgate/quota/v1/ReportUsageResponse";
import { isWellFormedKey, type KeyHasher } from "./keys.ts";
import { quotaOf } from "./meter.ts";
import type { QuotaMetrics } from "./metrics.ts";
import type { QuotaStore, Refund } from "./store/types.ts";
import { dayId, isDayId, isMonthId, monthId, recentDays, windowsAt } from "./windows.ts";

/** The durable consumer every quota-meter replica shares (JetStream spreads the events). */
export const USAGE_DURABLE = "quota-meter-usage";
const DEFAULT_DAYS = 30;
const MAX_DAYS = 366;

export interface UsageDeps {
  store: QuotaStore;
  publisher: EventPublisher;
  hasher: KeyHasher;
  now: () => number;
  logger: Logger;
  metrics: QuotaMetrics;
  dedupeTtlMs: number;
}

const unavailable = () =>
  new ServiceError(
    grpc.status.UNAVAILABLE,
    "service_unavailable",
    "usage store unavailable; retry with backoff",
  );
const invalidKey = () =>
  new ServiceError(grpc.status.UNAUTHENTICATED, "invalid_api_key", "the API key is unknown or revoked");

export function createUsage(deps: UsageDeps) {
  const { store, logger, metrics } = deps;

  return {
    /**
     * Finished calls from the gateway: each becomes a usage event (durable outbox, then
     * JetStream), and a failed call's unit goes back to both windows it was counted in.
     * Fails UNAVAILABLE when a refund could not be applied, so the gateway may resend
     * the batch: refunds are once per request id and events dedupe on their id.
     */
    async reportUsage(req: ReportUsageRequest__Output): Promise<ReportUsageResponse> {
      const refunds: Refund[] = [];
      const events: UsageEventV1[] = [];
      for (const r of req.records) {
        const received = Date.parse(r.time);
        const time = new Date(Number.isNaN(received) ? deps.now() : received).toISOString();
        events.push({
          id: r.requestId,
          request_id: r.requestId,
          account_id: r.accountId,
          key_id: r.keyId,
          endpoint: r.endpoint,
          network: r.network,
          status: r.status,
          latency_ms: Math.max(0, Number.isFinite(r.latencyMs) ? r.latencyMs : 0),
          time,
        });
        if (r.refund) {
          const at = Date.parse(time);
          refunds.push({
            requestId: r.requestId,
            accountId: r.accountId,
            day: isDayId(r.dayWindow) ? r.dayWindow : dayId(at),
            month: isMonthId(r.monthWindow) ? r.monthWindow : monthId(at),
          });
        }
      }
      let accepted = events.length;
      try {
        // The whole batch in one journal write: the common case.
        deps.publisher.publishMany(USAGE_V1, events);
      } catch {
        // Some record does not fit the event: publish one by one to keep the rest.
        accepted = 0;
        for (const event of events) {
          try {
            deps.publisher.publish(USAGE_V1, event);
            accepted++;
          } catch (err) {
            logger.warn(
              { err, requestId: event.request_id },
              "usage record rejected: it does not fit the usage event",
            );
          }
        }
      }
      const results = await Promise.allSettled(refunds.map((f) => store.refund(f, deps.dedupeTtlMs)));
      let failed = 0;
      for (const result of results) {
        if (result.status === "rejected") failed++;
        metrics.refunds.inc({
          result: result.status === "rejected" ? "failed" : result.value ? "applied" : "duplicate",
        });
      }
      if (failed > 0) {
        logger.warn({ failed }, "refunds could not be applied; the gateway may resend the batch");
        throw new ServiceError(
          grpc.status.UNAVAILABLE,
          "service_unavailable",
          `${failed} refund(s) not applied; resend the batch`,
        );
      }
      return { accepted };
    },

    /** Per-day usage of the account that owns the key, most recent `days` UTC days, oldest first. */
    async getUsage(req: GetUsageRequest__Output): Promise<GetUsageResponse> {
      if (!isWellFormedKey(req.apiKey)) throw invalidKey();
      const hash = deps.hasher(req.apiKey);
      const key = await store.findKey(hash).catch(() => {
        throw unavailable();
      });
      if (!key) throw invalidKey();
      const count = req.days > 0 ? Math.min(req.days, MAX_DAYS) : DEFAULT_DAYS;
      const nowMs = deps.now();
      const windows = windowsAt(nowMs);
      const [account, usage] = await Promise.all([
        store.getAccount(key.accountId),
        store.readUsage(key.accountId, recentDays(nowMs, count), windows),
      ]).catch(() => {
        throw unavailable();
      });
      return {
        accountId: key.accountId,
        days: usage.days,
        quota: account
          ? quotaOf({
              dayLimit: account.dailyLimit,
              dayUsed: usage.dayUsed,
              monthLimit: account.monthlyLimit,
              monthUsed: usage.monthUsed,
            })
          : null,
      };
    },

    /** Counts the usage stream into per-account daily usage, once per event id. */
    startConsumer(consumer: EventConsumer): void {
      // Counting is one Redis call: a short ack wait redelivers a delivery lost in a
      // network blip within seconds rather than the default half minute.
      const options = { ackWaitMs: 10_000, retryDelayMs: 1_000 };
      consumer.consume(
        USAGE_V1,
        USAGE_DURABLE,
        async (event) => {
          const counted = await store.countUsage(
            {
              eventId: event.id,
              accountId: event.account_id,
              day: dayId(Date.parse(event.time)),
              error: event.status >= 400,
            },
            deps.dedupeTtlMs,
          );
          metrics.usageCounted.inc({ result: counted ? "counted" : "duplicate" });
        },
        options,
      );
    },
  };
}
