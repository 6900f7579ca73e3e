import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { meterClient, metric, startTestMeter, type TestMeter } from "./helpers.ts";

let qm: TestMeter;

beforeAll(async () => {
  // A generous Redis budget: this proves atomicity, not latency. With the default 50 ms a
  // 1,000-call burst on a busy 2-core machine can exceed the budget and be served
  // unmetered (fail-open, by design); the last test shows that never overcounts.
  qm = await startTestMeter({ redisBudgetMs: 5_000 });
});

afterAll(async () => {
  await qm?.stop();
});

describe("Authorize under concurrency", () => {
  it("1,000 concurrent calls for an account with 100 left allow exactly 100", async () => {
    const { apiKey, accountId } = await qm.admin.accountWithKey({
      daily: 150,
      monthly: 10_000,
      burst: 1_000_000,
    });
    // Spend 50 first, so 100 are left.
    for (let i = 0; i < 50; i++) expect((await qm.meter.authorize(apiKey)).decision).toBe("DECISION_ALLOW");

    // Several client connections, like several gateway replicas.
    const clients = Array.from({ length: 4 }, () => meterClient(`127.0.0.1:${qm.handle.grpcPort}`));
    try {
      const started = performance.now();
      const results = await Promise.all(
        Array.from({ length: 1_000 }, (_, i) => (clients[i % clients.length] ?? qm.meter).authorize(apiKey)),
      );
      const elapsed = performance.now() - started;
      const allowed = results.filter((r) => r.decision === "DECISION_ALLOW");
      const refused = results.filter((r) => r.decision === "DECISION_DAILY_LIMIT_EXCEEDED");
      expect(allowed).toHaveLength(100);
      expect(refused).toHaveLength(900);
      expect(allowed.every((r) => r.metered && r.accountId === accountId)).toBe(true);
      // Every allowed call saw a distinct "used" value: 51..150, no overshoot, no repeats.
      const used = allowed.map((r) => r.quota?.dayUsed).sort((a, b) => Number(a) - Number(b));
      expect(used).toEqual(Array.from({ length: 100 }, (_, i) => 51 + i));
      expect(refused.every((r) => r.quota?.dayUsed === 150)).toBe(true);
      expect(await metric(qm.handle.metricsPort, "quota_fail_open_total")).toBe(0);
      console.log(`1,000 concurrent Authorize calls answered in ${elapsed.toFixed(0)} ms`);
    } finally {
      for (const c of clients) c.close();
    }
  });

  it("also holds across two quota-meter replicas sharing Redis", async () => {
    const replica = await startTestMeter({
      redisBudgetMs: 5_000,
      redisPrefix: qm.config.redisPrefix,
      databaseUrl: qm.config.databaseUrl,
    });
    try {
      const { apiKey } = await qm.admin.accountWithKey({ daily: 0, monthly: 60, burst: 1_000_000 });
      const results = await Promise.all(
        Array.from({ length: 400 }, (_, i) => (i % 2 ? replica.meter : qm.meter).authorize(apiKey)),
      );
      expect(results.filter((r) => r.decision === "DECISION_ALLOW")).toHaveLength(60);
      expect(results.filter((r) => r.decision === "DECISION_MONTHLY_LIMIT_EXCEEDED")).toHaveLength(340);
    } finally {
      await replica.stop();
    }
  });

  it("with the default 50 ms budget, calls past the budget are served unmetered and Redis still counts exactly the cap", async () => {
    const replica = await startTestMeter({
      redisPrefix: qm.config.redisPrefix,
      databaseUrl: qm.config.databaseUrl,
    });
    try {
      const { apiKey } = await qm.admin.accountWithKey({ daily: 100, monthly: 10_000, burst: 1_000_000 });
      const results = await Promise.all(Array.from({ length: 1_000 }, () => replica.meter.authorize(apiKey)));
      const metered = results.filter((r) => r.decision === "DECISION_ALLOW" && r.metered);
      const unmetered = results.filter((r) => r.decision === "DECISION_ALLOW" && !r.metered);
      expect(metered.length).toBeLessThanOrEqual(100);
      expect(new Set(metered.map((r) => r.quota?.dayUsed)).size).toBe(metered.length);
      expect(unmetered.every((r) => r.quota === null)).toBe(true);
      expect(metered.length + unmetered.length).toBeGreaterThanOrEqual(100);
      // The counter never passes the cap, whatever the answers were.
      const usage = await qm.meter.usage(apiKey, 1);
      expect(usage.quota).toMatchObject({ dayLimit: 100, dayUsed: 100 });
      console.log(
        `default budget: ${metered.length} metered, ${unmetered.length} served unmetered (fail-open)`,
      );
    } finally {
      await replica.stop();
    }
  });
});
