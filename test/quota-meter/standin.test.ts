import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tcpProxy } from "../support/tcp-proxy.ts";
import {
  capturingLogger,
  meterClient,
  metric,
  NATS_PORT,
  REDIS_PORT,
  startTestMeter,
  type TestMeter,
} from "./helpers.ts";

// "Unreachable at startup" is a port nobody listens on: a proxy this file opened and cut.
let deadRedis: Awaited<ReturnType<typeof tcpProxy>>;
let deadNats: Awaited<ReturnType<typeof tcpProxy>>;

beforeAll(async () => {
  deadRedis = await tcpProxy(REDIS_PORT);
  await deadRedis.cut();
  deadNats = await tcpProxy(NATS_PORT);
  await deadNats.cut();
});

afterAll(async () => {
  await deadRedis?.close();
  await deadNats?.close();
});

describe("stand-ins on a machine without Redis or NATS", () => {
  let qm: TestMeter;
  const log = capturingLogger();
  let t = Date.UTC(2026, 6, 31, 23, 59, 0);

  beforeAll(async () => {
    qm = await startTestMeter(
      { redisUrl: deadRedis.url("redis"), natsUrl: deadNats.url("nats"), redisConnectTimeoutMs: 300 },
      { logger: log.logger, now: () => t },
    );
  });

  afterAll(async () => {
    await qm?.stop();
  });

  it("starts on the in-memory store and says so in one plain line", async () => {
    expect(qm.handle.storeKind).toBe("memory");
    // time-based: proves the line is NOT said again: 1.5 s of the service running on.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const lines = log.lines().map((l) => String(l.msg));
    const redisLines = lines.filter((m) => m.includes("in-memory"));
    expect(redisLines).toHaveLength(1);
    expect(redisLines[0]).toMatch(
      /^Redis is unreachable at redis:\/\/127\.0\.0\.1:\d+: using the in-memory single-node store/,
    );
    const natsLines = lines.filter((m) => m.includes("NATS"));
    expect(natsLines).toHaveLength(1);
    expect(natsLines[0]).toMatch(/events are held locally in .+ until NATS is reachable$/);
  });

  it("meters with the same rules: windows, rollover, burst, exact counts under concurrency", async () => {
    const { apiKey } = await qm.admin.accountWithKey({ daily: 0, monthly: 3, burst: 1_000_000 });
    for (let i = 1; i <= 3; i++)
      expect((await qm.meter.authorize(apiKey)).quota).toMatchObject({ monthUsed: i });
    expect((await qm.meter.authorize(apiKey)).decision).toBe("DECISION_MONTHLY_LIMIT_EXCEEDED");
    t = Date.UTC(2026, 7, 1, 0, 0, 0);
    expect(await qm.meter.authorize(apiKey)).toMatchObject({
      decision: "DECISION_ALLOW",
      monthWindow: "2026-08",
    });

    const burst = await qm.admin.accountWithKey({ burst: 3 });
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push((await qm.meter.authorize(burst.apiKey)).decision);
    expect(decisions).toEqual([
      "DECISION_ALLOW",
      "DECISION_ALLOW",
      "DECISION_ALLOW",
      "DECISION_RATE_LIMITED",
    ]);

    const busy = await qm.admin.accountWithKey({ daily: 100, burst: 1_000_000 });
    const clients = Array.from({ length: 4 }, () => meterClient(`127.0.0.1:${qm.handle.grpcPort}`));
    try {
      const results = await Promise.all(
        Array.from({ length: 1_000 }, (_, i) => (clients[i % 4] ?? qm.meter).authorize(busy.apiKey)),
      );
      expect(results.filter((r) => r.decision === "DECISION_ALLOW")).toHaveLength(100);
    } finally {
      for (const c of clients) c.close();
    }
  });

  it("accepts usage reports while NATS is away: events wait in the outbox", async () => {
    const { apiKey } = await qm.admin.accountWithKey({ burst: 1_000_000 });
    const auth = await qm.meter.authorize(apiKey);
    const res = await qm.meter.report([
      {
        requestId: "standin-1",
        accountId: auth.accountId,
        keyId: auth.keyId,
        endpoint: "/api/chain/chain-id",
        network: "ethereum",
        status: 200,
        latencyMs: 2,
        time: new Date(t).toISOString(),
        refund: false,
        dayWindow: auth.dayWindow,
        monthWindow: auth.monthWindow,
      },
    ]);
    expect(res.accepted).toBe(1);
    expect(await metric(qm.handle.metricsPort, "events_outbox_depth")).toBeGreaterThanOrEqual(1);
  });
});
