import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../support/eventually.ts";
import { testRedis } from "../support/redis.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";
import { capturingLogger, metric, REDIS_PORT, startTestMeter, type TestMeter, waitFor } from "./helpers.ts";

// quota-meter reaches the machine's real Redis through a TCP proxy this file controls, so
// the link can be cut or stalled without touching the Redis server other suites use.
let proxy: Awaited<ReturnType<typeof tcpProxy>>;
let qm: TestMeter;
let direct: TestMeter;
const log = capturingLogger();
const redis = testRedis("test:fail-open-reader:");

beforeAll(async () => {
  proxy = await tcpProxy(REDIS_PORT);
  qm = await startTestMeter(
    { redisUrl: proxy.url("redis"), keySnapshotRefreshMs: 200, redisBudgetMs: 50, failOpenCooldownMs: 500 },
    { logger: log.logger },
  );
  // A second replica on a direct link, sharing the same data (Redis prefix, database).
  direct = await startTestMeter({ redisPrefix: qm.config.redisPrefix, databaseUrl: qm.config.databaseUrl });
});

afterAll(async () => {
  await direct?.stop();
  await qm?.stop();
  await proxy?.close();
});

describe("fail-open when Redis is unreachable", () => {
  it("serves known keys unmetered and quickly when the link is cut, then meters again when it returns", async () => {
    const good = await qm.admin.accountWithKey({ daily: 1_000, burst: 1_000_000 });
    const inactive = await qm.admin.accountWithKey({});
    await qm.admin.update(inactive.accountId, { status: "past_due" });
    // Created on the other replica: this one learns it from the periodic snapshot refresh.
    const elsewhere = await direct.admin.accountWithKey({ burst: 1_000_000 });
    const revokedElsewhere = await direct.admin.accountWithKey({ burst: 1_000_000 });
    await direct.admin.revoke(revokedElsewhere.accountId, revokedElsewhere.keyId);
    expect(await qm.meter.authorize(good.apiKey)).toMatchObject({
      decision: "DECISION_ALLOW",
      metered: true,
    });
    // This replica learns the keys made elsewhere from its snapshot refresh: every unrevoked key.
    const unrevoked = async () =>
      (
        await qm.database!.query<{ n: number }>(
          "select count(*)::int as n from api_keys where revoked_at is null",
        )
      )[0]?.n;
    await until(
      "the key snapshot holds every unrevoked key",
      async () => (await metric(qm.handle.metricsPort, "quota_key_snapshot_keys")) === (await unrevoked()),
    );

    const reasons = async () => ({
      timeout: await metric(qm.handle.metricsPort, "quota_fail_open_total", { reason: "timeout" }),
      unavailable: await metric(qm.handle.metricsPort, "quota_fail_open_total", { reason: "unavailable" }),
    });
    const reasonsBefore = await reasons();
    await proxy.cut();
    try {
      const served = [];
      for (let i = 0; i < 20; i++) served.push(await qm.meter.authorize(good.apiKey));
      for (const value of served) {
        expect(value).toMatchObject({
          decision: "DECISION_ALLOW",
          metered: false,
          accountId: good.accountId,
        });
        expect(value.quota).toBeNull();
      }
      // Quick: no call waits on the reconnect, i.e. for the 50 ms Redis budget, told by each
      // fail-open's reason rather than by a time a busy machine stretches. (The first may still try
      // the dead socket and spend the budget.)
      const after = await reasons();
      expect(after.timeout - reasonsBefore.timeout).toBeLessThanOrEqual(1);
      expect(after.unavailable - reasonsBefore.unavailable).toBeGreaterThanOrEqual(19);
      expect((await qm.meter.authorize(elsewhere.apiKey)).decision).toBe("DECISION_ALLOW");
      expect((await qm.meter.authorize(inactive.apiKey)).decision).toBe("DECISION_SUBSCRIPTION_INACTIVE");
      expect((await qm.meter.authorize(revokedElsewhere.apiKey)).decision).toBe("DECISION_INVALID_KEY");
      expect((await qm.meter.authorize(`tg_live_${"B".repeat(43)}`)).decision).toBe("DECISION_INVALID_KEY");
      expect(await metric(qm.handle.metricsPort, "quota_fail_open_total")).toBeGreaterThanOrEqual(24);
      // One log line for the whole burst of fail-open answers, not one per call.
      expect(log.lines().filter((l) => String(l.msg).includes("fails open"))).toHaveLength(1);
      // An admin write Redis cannot take is refused whole: PostgreSQL rolls back, so the
      // operator's retry never makes a second account.
      const accounts = async () =>
        (await qm.database!.query<{ n: number }>("select count(*)::int as n from accounts"))[0]?.n;
      const before = await accounts();
      await expect(qm.admin.account({})).rejects.toThrow(/retry/);
      expect(await accounts()).toBe(before);
    } finally {
      await proxy.restore();
    }
    const resumed = await waitFor(async () => {
      const res = await qm.meter.authorize(good.apiKey);
      return res.metered ? res : undefined;
    }, 10_000);
    // Calls served during the outage were not counted: 1 before + this one.
    expect(resumed.quota).toMatchObject({ dayUsed: 2 });
  });

  it("answers within the budget when Redis is slow, then meters again when it speeds up", async () => {
    const { apiKey } = await qm.admin.accountWithKey({ daily: 1_000, burst: 1_000_000 });
    expect((await qm.meter.authorize(apiKey)).metered).toBe(true);

    const timeouts = () => metric(qm.handle.metricsPort, "quota_fail_open_total", { reason: "timeout" });
    const timedOut = await timeouts();
    proxy.stall();
    // Answered once the 50 ms budget is spent (its reason says so), not when Redis answers.
    expect(await qm.meter.authorize(apiKey)).toMatchObject({ decision: "DECISION_ALLOW", metered: false });
    expect(await timeouts()).toBe(timedOut + 1);
    // A few timeouts in a row open the breaker: while it cools down, calls do not even
    // wait for the budget.
    const cooling = await metric(qm.handle.metricsPort, "quota_fail_open_total", { reason: "cooldown" });
    await Promise.all([qm.meter.authorize(apiKey), qm.meter.authorize(apiKey)]);
    const next = await qm.meter.authorize(apiKey);
    expect(next.metered).toBe(false);
    // Answered by the open breaker, not after another wait for the budget (told by its reason, not
    // by a time a busy machine stretches).
    expect(await metric(qm.handle.metricsPort, "quota_fail_open_total", { reason: "cooldown" })).toBe(
      cooling + 1,
    );
    expect(
      await metric(qm.handle.metricsPort, "quota_fail_open_total", { reason: "timeout" }),
    ).toBeGreaterThan(0);

    await proxy.restore();
    await waitFor(async () => (await qm.meter.authorize(apiKey)).metered, 10_000);
  });

  it("gives back what an Authorize counted when its answer was lost (Redis ran it, then the link dropped): the call served unmetered counts nothing", async () => {
    const { apiKey, accountId } = await qm.admin.accountWithKey({ daily: 1_000, burst: 1_000_000 });
    await waitFor(async () => (await qm.meter.authorize(apiKey)).metered, 10_000);
    const before = (await direct.meter.authorize(apiKey)).quota?.dayUsed ?? 0;
    // The day window's counter, read as it is in Redis (an Authorize would count one more).
    const [dayKey] = await redis.keys(`${qm.config.redisPrefix}*d:${accountId}:*`);
    const dayUsed = async () => Number(await redis.get(dayKey ?? ""));
    expect(await dayUsed()).toBe(before);
    // The request reaches Redis, which runs the script and counts; its reply is held, then lost.
    proxy.holdReplies();
    const lost = await qm.meter.authorize(apiKey);
    expect(lost).toMatchObject({ decision: "DECISION_ALLOW", metered: false });
    // It did count in Redis; only its answer is held.
    await waitFor(async () => (await dayUsed()) === before + 1, 10_000);
    await proxy.cut();
    await proxy.restore();
    await waitFor(async () => (await qm.meter.authorize(apiKey)).metered, 10_000);
    // The metered call just above counted one; the lost one is given back at the next retry.
    await waitFor(async () => (await dayUsed()) === before + 1, 10_000);
    expect(await dayUsed()).toBe(before + 1);
  });
});
