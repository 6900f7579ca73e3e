// Issue 13: Redis keeps nothing on disk, so a restart (or a failover that lost writes) comes back
// empty. PostgreSQL is the system of record: quota-meter notices the lost copy and re-seeds it on its
// own — every account and key works again, metered, with the windows rebuilt from the usage rollups
// — within seconds and with no operator action. This file starts a PRIVATE redis-server on a free
// port and stops it; the machine's shared Redis is never touched.
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { freePort } from "@tollgate/local";
import type { AuthorizeResponse__Output } from "@tollgate/platform/generated/tollgate/quota/v1/AuthorizeResponse";
import type { UsageRecord } from "@tollgate/platform/generated/tollgate/quota/v1/UsageRecord";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedStats } from "../../services/quota-meter/src/seeder.ts";
import { startTestMeter, type TestMeter, waitFor } from "./helpers.ts";

let port: number;
let redis: ChildProcess | undefined;
let qm: TestMeter;
const seeds: SeedStats[] = [];

/** A redis-server of this file's own, keeping nothing on disk (like the machines' Redis). */
async function startRedis(): Promise<void> {
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    {
      stdio: "ignore",
    },
  );
  redis = child;
  await waitFor(async () => {
    const c = createClient({ url: `redis://127.0.0.1:${port}` });
    c.on("error", () => {});
    const ok = await c.connect().then(
      () => c.ping().then((r) => r === "PONG"),
      () => false,
    );
    c.destroy();
    return ok;
  }, 10_000);
}

async function stopRedis(): Promise<void> {
  const child = redis;
  if (!child || child.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

beforeAll(async () => {
  port = await freePort();
  await startRedis();
  qm = await startTestMeter(
    { redisUrl: `redis://127.0.0.1:${port}`, redisStandIn: false, redisBudgetMs: 1_000 },
    { onSeeded: (s) => seeds.push(s) },
  );
});

afterAll(async () => {
  await qm?.stop();
  await stopRedis();
});

function record(a: AuthorizeResponse__Output, refund = false, status = 200): UsageRecord {
  return {
    requestId: randomUUID(),
    accountId: a.accountId,
    keyId: a.keyId,
    endpoint: "/api/chain/block-number",
    network: "ethereum",
    status,
    latencyMs: 3,
    time: new Date().toISOString(),
    refund,
    dayWindow: a.dayWindow,
    monthWindow: a.monthWindow,
  };
}

describe("a Redis that comes back empty is re-seeded from PostgreSQL", () => {
  it("every account and key works again, metered, windows rebuilt from the rollups, in seconds", async () => {
    const paying = await qm.admin.accountWithKey({ daily: 10, monthly: 100 });
    const secondKey = await qm.admin.key(paying.accountId);
    const lapsed = await qm.admin.accountWithKey({});
    await qm.admin.update(lapsed.accountId, { status: "past_due" });
    const revoked = await qm.admin.accountWithKey({});
    await qm.admin.revoke(revoked.accountId, revoked.keyId);
    const capped = await qm.admin.accountWithKey({ daily: 2 });

    // Three counted calls (one of them given back: no answer) and the capped account spent.
    const calls = [];
    for (const key of [paying.apiKey, paying.apiKey, secondKey.apiKey])
      calls.push(await qm.meter.authorize(key));
    expect(calls.map((c) => c.quota?.dayUsed)).toEqual([1, 2, 3]);
    const spent = [await qm.meter.authorize(capped.apiKey), await qm.meter.authorize(capped.apiKey)];
    expect((await qm.meter.authorize(capped.apiKey)).decision).toBe("DECISION_DAILY_LIMIT_EXCEEDED");
    await qm.meter.report([
      record(calls[0]!),
      record(calls[1]!, true, 503),
      record(calls[2]!, false, 422),
      ...spent.map((c) => record(c)),
    ]);
    // The usage reached the rollups (the documented bound: what is not folded yet is lost).
    const rollup = async (accountId: string) =>
      (
        await qm.database!.query<{ requests: number; counted: number }>(
          "select requests::int, counted::int from usage_daily where account_id = $1",
          [accountId],
        )
      )[0];
    await waitFor(
      async () => (await rollup(paying.accountId))?.requests === 3 && (await rollup(capped.accountId)),
    );
    expect(await rollup(paying.accountId)).toEqual({ requests: 3, counted: 2 });
    await waitFor(async () => (await qm.meter.usage(paying.apiKey, 1)).days[0]?.requests === 3);

    // Redis stops (a crash, a failover) and comes back with nothing: no disk, no replica.
    await stopRedis();
    const during = await qm.meter.authorize(paying.apiKey);
    // Spec 8.3 meanwhile: known keys served unmetered, never blocked.
    expect(during).toMatchObject({ decision: "DECISION_ALLOW", metered: false, quota: null });
    await startRedis();
    const restarted = Date.now();

    // No operator action: the next metered answer comes by itself.
    const back = await waitFor(
      async () => {
        const res = await qm.meter.authorize(paying.apiKey);
        return res.metered ? res : undefined;
      },
      10_000,
      20,
    );
    const recoveredMs = Date.now() - restarted;
    expect(recoveredMs).toBeLessThan(5_000);
    // Four accounts, four live keys (the revoked one stays out), three accounts with windows.
    expect(seeds.at(-1)).toMatchObject({ accounts: 4, keys: 4 });
    console.info(`re-seeded and metering again ${recoveredMs} ms after Redis came back empty`);

    // Windows rebuilt from the rollups: 2 counted calls (the refunded one is not), plus this one.
    expect(back.quota).toMatchObject({ dayLimit: 10, dayUsed: 3, monthLimit: 100, monthUsed: 3 });
    expect((await qm.meter.authorize(secondKey.apiKey)).quota).toMatchObject({ dayUsed: 4 });
    expect((await qm.meter.authorize(capped.apiKey)).decision).toBe("DECISION_DAILY_LIMIT_EXCEEDED");
    expect((await qm.meter.authorize(lapsed.apiKey)).decision).toBe("DECISION_SUBSCRIPTION_INACTIVE");
    expect((await qm.meter.authorize(revoked.apiKey)).decision).toBe("DECISION_INVALID_KEY");
    // Per-day usage (GetUsage) is back from the rollups too.
    expect((await qm.meter.usage(paying.apiKey, 1)).days[0]).toMatchObject({ requests: 3, errors: 2 });
    // And the records themselves were never in danger.
    const listed = await qm.admin.list(paying.accountId);
    expect(listed.keys.map((k) => k.id).sort()).toEqual([paying.keyId, secondKey.keyId].sort());
  });

  it("notices a copy lost without a reconnect (a flush) within the check interval", async () => {
    const { apiKey } = await qm.admin.accountWithKey({ daily: 5 });
    expect((await qm.meter.authorize(apiKey)).metered).toBe(true);
    const before = seeds.length;
    const client = createClient({ url: `redis://127.0.0.1:${port}` });
    await client.connect();
    await client.flushAll(); // this file's own server
    client.destroy();
    const flushed = Date.now();
    await waitFor(async () => seeds.length > before, 5_000, 20);
    expect(Date.now() - flushed).toBeLessThan(3_000);
    const res = await qm.meter.authorize(apiKey);
    expect(res).toMatchObject({ decision: "DECISION_ALLOW", metered: true });
  });
});
