// The gateway's usage reporter driven with plain objects (quota-meter's ReportUsage as the test
// scripts it): a batch is sent again under one batch id until quota-meter takes it, across an
// outage as long as a quota-meter restart, and nothing is dropped (found by the chaos run: five
// quick attempts lost the usage of every call served while quota-meter restarted).
import { createLogger } from "@tollgate/platform";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { QuotaMeterClient } from "../../services/gateway/src/clients/quota-meter.ts";
import { createUsageReporter } from "../../services/gateway/src/usage-reporter.ts";

afterEach(() => {
  vi.useRealTimers();
});

describe("usage reporter", () => {
  it("keeps sending a batch through a 20 s quota-meter outage (stand-in ReportUsage that refuses, then takes it once)", async () => {
    vi.useFakeTimers();
    const start = Date.now();
    const attempts: string[] = [];
    const taken: { batchId: string; records: number }[] = [];
    const quota = {
      async report(records: unknown[], batchId: string) {
        attempts.push(batchId);
        if (Date.now() - start < 20_000) throw new Error("14 UNAVAILABLE: No connection established");
        taken.push({ batchId, records: records.length });
        return {};
      },
    } as unknown as QuotaMeterClient;
    const reporter = createUsageReporter(quota, createLogger("test"), { maxRecords: 10, maxDelayMs: 50 });
    const record = { accountId: "acct_1", keyId: "key_1", status: 200, counted: true } as never;
    for (let i = 0; i < 3; i++) reporter.add(record);
    const flushed = reporter.flush();
    await vi.advanceTimersByTimeAsync(60_000);
    await flushed;
    expect(taken).toEqual([{ batchId: attempts[0], records: 3 }]);
    expect(attempts.length).toBeGreaterThan(5);
    expect(new Set(attempts).size).toBe(1);
  });
});
