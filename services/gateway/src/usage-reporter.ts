import type { Logger } from "@tollgate/platform";
import type { QuotaMeterClient, UsageRecord } from "./clients/quota-meter.ts";

/**
 * Collects finished API-key calls and reports them to quota-meter in batches, after
 * the responses have gone out: the hot path never waits on usage bookkeeping.
 */
export function createUsageReporter(
  quota: QuotaMeterClient,
  logger: Logger,
  opts: { maxRecords: number; maxDelayMs: number },
) {
  let buffer: UsageRecord[] = [];
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (buffer.length === 0) return inFlight;
    const records = buffer;
    buffer = [];
    inFlight = inFlight.then(() =>
      quota.report(records).then(
        () => undefined,
        (err: unknown) => {
          // Losing a report loses a usage event or a refund, never a response; say so.
          logger.warn({ err, records: records.length }, "usage report failed");
        },
      ),
    );
    return inFlight;
  }

  return {
    add(record: UsageRecord): void {
      buffer.push(record);
      if (buffer.length >= opts.maxRecords) void flush();
      else timer ??= setTimeout(() => void flush(), opts.maxDelayMs);
    },
    flush,
  };
}

export type UsageReporter = ReturnType<typeof createUsageReporter>;
