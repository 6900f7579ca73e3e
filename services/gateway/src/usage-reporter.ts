import { randomUUID } from "node:crypto";
import type { Logger } from "@tollgate/platform";
import type { LeaseReturn, QuotaMeterClient, UsageRecord } from "./clients/quota-meter.ts";

/**
 * How long one batch is retried while quota-meter is unreachable (a restart takes seconds; five
 * quick attempts lost the usage of every call served across a quota-meter restart), and the
 * longest wait between attempts.
 */
const RETRY_FOR_MS = 10 * 60_000;
const MAX_BACKOFF_MS = 5_000;
/** Batches waiting to be sent; past this, during a long quota-meter outage, new ones are dropped (logged). */
const MAX_QUEUED_BATCHES = 500;

/**
 * Collects finished API-key calls (and the unused units of ended leases, and the Authorize calls
 * given up on) and reports them to
 * quota-meter in batches, after the responses have gone out: the hot path never waits on usage
 * bookkeeping. A failed batch is sent again with backoff under the same batch id (quota-meter
 * stores a batch, a refund and a lease return once each, so resending is safe).
 */
export function createUsageReporter(
  quota: QuotaMeterClient,
  logger: Logger,
  opts: { maxRecords: number; maxDelayMs: number },
) {
  let buffer: UsageRecord[] = [];
  let returns: LeaseReturn[] = [];
  let released: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();
  let queued = 0;

  async function send(
    records: UsageRecord[],
    leaseReturns: LeaseReturn[],
    releases: string[],
  ): Promise<void> {
    // One id per batch, kept across resends: quota-meter stores and counts the batch once.
    const batchId = randomUUID();
    const giveUpAt = Date.now() + RETRY_FOR_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        await quota.report(records, batchId, leaseReturns, releases);
        return;
      } catch (err) {
        if (Date.now() >= giveUpAt) {
          // Losing a report loses usage events or refunds, never a response; say so.
          logger.error({ err, records: records.length }, "usage report dropped after retries");
          return;
        }
        if (attempt === 5) {
          logger.warn({ err, records: records.length }, "usage report delayed: quota-meter unreachable");
        }
        const backoff = Math.min(MAX_BACKOFF_MS, 100 * 2 ** attempt);
        await new Promise((r) => setTimeout(r, backoff / 2 + (backoff / 2) * Math.random()));
      }
    }
  }

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (buffer.length === 0 && returns.length === 0 && released.length === 0) return inFlight;
    const records = buffer;
    const leaseReturns = returns;
    const releases = released;
    buffer = [];
    returns = [];
    released = [];
    if (queued >= MAX_QUEUED_BATCHES) {
      // Memory stays bounded; what is lost is usage events and refunds, never responses.
      logger.error({ records: records.length }, "usage report dropped: quota-meter backlog is full");
      return inFlight;
    }
    queued++;
    inFlight = inFlight
      .then(() => send(records, leaseReturns, releases))
      .finally(() => {
        queued--;
      });
    return inFlight;
  }

  return {
    add(record: UsageRecord): void {
      buffer.push(record);
      if (buffer.length >= opts.maxRecords) void flush();
      else timer ??= setTimeout(() => void flush(), opts.maxDelayMs);
    },
    /** Unused units of ended leases, sent with the next batch. */
    returnLeases(ended: LeaseReturn[]): void {
      if (ended.length === 0) return;
      returns.push(...ended);
      timer ??= setTimeout(() => void flush(), opts.maxDelayMs);
    },
    /**
     * An Authorize this gateway gave up on (it answered the call 503): quota-meter gives back
     * whatever it counted, or counts nothing if it has not run it yet. Sent with the next batch.
     */
    release(authorizationId: string): void {
      released.push(authorizationId);
      timer ??= setTimeout(() => void flush(), opts.maxDelayMs);
    },
    flush,
  };
}

export type UsageReporter = ReturnType<typeof createUsageReporter>;
