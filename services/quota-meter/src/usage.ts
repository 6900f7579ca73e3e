import { randomUUID } from "node:crypto";
import type { EventPublisher, UsageBatchV2, UsageCallV2 } from "@tollgate/events";
import { USAGE_BATCH_MAX, USAGE_V2 } from "@tollgate/events";
import { grpc, type Logger, ServiceError } from "@tollgate/platform";
import type { GetUsageRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/GetUsageRequest";
import type { GetUsageResponse } from "@tollgate/platform/generated/tollgate/quota/v1/GetUsageResponse";
import type { ReportUsageRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/ReportUsageRequest";
import type { ReportUsageResponse } from "@tollgate/platform/generated/tollgate/quota/v1/ReportUsageResponse";
import { isWellFormedKey, type KeyHasher, sameHash } from "./keys.ts";
import { quotaOf } from "./meter.ts";
import type { QuotaMetrics } from "./metrics.ts";
import type { QuotaStore, Refund } from "./store/types.ts";
import { checkedBatch, utcTime } from "./usage-check.ts";
import { dayId, isDayId, isMonthId, monthId, recentDays, windowsAt } from "./windows.ts";

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
  /** The burst guard of accounts without their own rate, shared with Authorize. */
  defaultBurst: number;
}

const unavailable = () =>
  new ServiceError(
    grpc.status.UNAVAILABLE,
    "service_unavailable",
    "usage store unavailable; retry with backoff",
  );
const invalidKey = () =>
  new ServiceError(grpc.status.UNAUTHENTICATED, "invalid_api_key", "the API key is unknown or revoked");
const inactive = () =>
  new ServiceError(
    grpc.status.PERMISSION_DENIED,
    "subscription_inactive",
    "the subscription behind this key is not active",
  );
const rateLimited = () =>
  new ServiceError(grpc.status.RESOURCE_EXHAUSTED, "rate_limited", "too many requests in a burst");

export function createUsage(deps: UsageDeps) {
  const { store, logger, metrics } = deps;

  return {
    /**
     * Finished calls from the gateway: the batch becomes ONE usage event (durable outbox, then
     * JetStream) whose id is the gateway's batch id, and a call that got no answer gives its unit
     * back to both windows it was counted in. Fails UNAVAILABLE when a refund could not be applied,
     * so the gateway resends the batch: refunds are once per (account, request id), and the event
     * is stored and counted once per batch id. A record without a request id or an account is
     * refused (not applied, not published, not in `accepted`): it could neither be applied once
     * nor be charged to anyone.
     */
    async reportUsage(req: ReportUsageRequest__Output): Promise<ReportUsageResponse> {
      const calls: UsageCallV2[] = [];
      const records: ReportUsageRequest__Output["records"] = [];
      const fallback = deps.now();
      for (const r of req.records) {
        if (!r.requestId || !r.accountId) {
          metrics.usageRejected.inc({ reason: r.requestId ? "no_account_id" : "no_request_id" });
          logger.warn(
            { requestId: r.requestId, accountId: r.accountId, endpoint: r.endpoint },
            "usage record refused: it has no request id or no account id",
          );
          continue;
        }
        calls.push({
          request_id: r.requestId,
          account_id: r.accountId,
          key_id: r.keyId,
          endpoint: r.endpoint,
          network: r.network,
          status: r.status,
          latency_ms: Math.max(0, Number.isFinite(r.latencyMs) ? r.latencyMs : 0),
          time: utcTime(r.time, fallback),
          // Authorize names the windows only of a call it counted (fail-open calls have none). A
          // failed call's unit refunded, or given back to its lease for the next call, is not this
          // call's: counting it would count the unit twice.
          counted: isDayId(r.dayWindow) && !r.refund && !r.returnedToLease,
          // Credits stay drawn only by an answered call; a refunded one gets them back below, one
          // given back to its credit lease was never drawn for this call.
          ...(r.creditsDrawn > 0 && !r.refund && !r.returnedToLease
            ? { credits: r.creditsDrawn, credits_epoch: r.creditsEpoch }
            : {}),
        });
        records.push(r);
      }
      // The gateway names the batch (and keeps the name when it resends); without one, this call
      // is its own batch.
      const batchId = req.batchId || randomUUID();
      const events: UsageBatchV2[] = [];
      const refunds: Refund[] = [];
      // What the answered calls drew from each credit lease, counted on the lease once per batch.
      const used = new Map<string, number>();
      let accepted = 0;
      for (let i = 0; i < calls.length; i += USAGE_BATCH_MAX) {
        const id = i === 0 ? batchId : `${batchId}:${i / USAGE_BATCH_MAX}`;
        // Checked once per event by its schema; a record that does not fit it (a caller bug) is
        // dropped alone, not the batch.
        const event = checkedBatch(
          id,
          calls.slice(i, i + USAGE_BATCH_MAX),
          records.slice(i, i + USAGE_BATCH_MAX),
          (r) => {
            metrics.usageRejected.inc({ reason: "invalid_event" });
            logger.warn({ requestId: r.requestId }, "usage record rejected: it does not fit the usage event");
          },
        );
        if (!event) continue;
        events.push(event.batch);
        accepted += event.batch.calls.length;
        for (const [j, r] of event.records.entries()) {
          const drew = event.batch.calls[j]?.credits;
          if (drew && r.creditLeaseId) used.set(r.creditLeaseId, (used.get(r.creditLeaseId) ?? 0) + drew);
          if (!r.refund) continue;
          const at = Date.parse(event.batch.calls[j]!.time);
          refunds.push({
            requestId: r.requestId,
            accountId: r.accountId,
            day: isDayId(r.dayWindow) ? r.dayWindow : dayId(at),
            month: isMonthId(r.monthWindow) ? r.monthWindow : monthId(at),
            ...(r.creditsDrawn > 0
              ? { credits: { drawn: r.creditsDrawn, epoch: r.creditsEpoch, lease: r.creditLeaseId } }
              : {}),
          });
        }
      }
      deps.publisher.publishMany(USAGE_V2, events);
      const returns = req.leaseReturns.filter((l) => l.leaseId && l.accountId && l.units > 0);
      const creditReturns = req.leaseReturns.filter((l) => l.leaseId && Number(l.creditsLeft) > 0);
      const releases = req.releasedAuthorizations.filter((id) => id !== "");
      const uses = [...used].map(([leaseId, credits]) => ({ leaseId, credits }));
      const [refunded, returned, released, creditsBack] = await Promise.all([
        Promise.allSettled(refunds.map((f) => store.refund(f, deps.dedupeTtlMs))),
        Promise.allSettled(
          returns.map((l) => {
            const at = deps.now();
            return store.returnLease(
              {
                leaseId: l.leaseId,
                accountId: l.accountId,
                units: l.units,
                day: isDayId(l.dayWindow) ? l.dayWindow : dayId(at),
                month: isMonthId(l.monthWindow) ? l.monthWindow : monthId(at),
              },
              deps.dedupeTtlMs,
            );
          }),
        ),
        Promise.allSettled(releases.map((id) => store.release(id, deps.dedupeTtlMs))),
        Promise.allSettled([
          ...(uses.length > 0 ? [store.useCreditLeases(batchId, uses, deps.dedupeTtlMs)] : []),
          ...creditReturns.map((l) => store.returnCreditLease(l.leaseId, Number(l.creditsLeft))),
        ]),
      ]);
      let failed = 0;
      for (const result of refunded) {
        if (result.status === "rejected") failed++;
        metrics.refunds.inc({
          result: result.status === "rejected" ? "failed" : result.value ? "applied" : "duplicate",
        });
      }
      for (const [i, result] of returned.entries()) {
        if (result.status === "rejected") failed++;
        else if (result.value) metrics.leaseUnitsReturned.inc(returns[i]?.units ?? 0);
      }
      for (const result of released) {
        if (result.status === "rejected") failed++;
        else metrics.authorizationsReleased.inc({ result: result.value ? "applied" : "duplicate" });
      }
      for (const result of creditsBack) if (result.status === "rejected") failed++;
      if (failed > 0) {
        logger.warn(
          { failed },
          "refunds, lease returns or releases could not be applied; the gateway may resend the batch",
        );
        throw new ServiceError(
          grpc.status.UNAVAILABLE,
          "service_unavailable",
          `${failed} refund(s), lease return(s) or release(s) not applied; resend the batch`,
        );
      }
      return { accepted };
    },

    /**
     * Per-day usage of the account that owns the key, most recent `days` UTC days, oldest
     * first. One store round trip, refused like a chain call: unknown key, inactive
     * subscription, or over the burst guard the account's chain calls share.
     */
    async getUsage(req: GetUsageRequest__Output): Promise<GetUsageResponse> {
      if (!isWellFormedKey(req.apiKey)) throw invalidKey();
      const hash = deps.hasher(req.apiKey);
      const count = req.days > 0 ? Math.min(req.days, MAX_DAYS) : DEFAULT_DAYS;
      const nowMs = deps.now();
      const usage = await store
        .readUsage({
          keyHash: hash,
          nowMs,
          windows: windowsAt(nowMs),
          days: recentDays(nowMs, count),
          defaultBurst: deps.defaultBurst,
        })
        .catch(() => {
          throw unavailable();
        });
      if (usage.decision === "invalid_key" || !usage.storedHash || !sameHash(usage.storedHash, hash)) {
        throw invalidKey();
      }
      if (usage.decision === "subscription_inactive") throw inactive();
      if (usage.decision === "rate_limited") throw rateLimited();
      return {
        accountId: usage.accountId,
        days: usage.days,
        quota: quotaOf(usage),
      };
    },
  };
}
