import { createHmac } from "node:crypto";
import { grpc } from "@tollgate/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminClient, metric, redis, startTestMeter, type TestMeter } from "./helpers.ts";

// A clock the tests move by hand, to cross a UTC day and a month boundary.
let t = Date.UTC(2026, 0, 15, 12, 0, 0);
const now = () => t;
const HIGH_BURST = 1_000_000;

let qm: TestMeter;

beforeAll(async () => {
  qm = await startTestMeter({}, { now });
});

afterAll(async () => {
  await qm?.stop();
});

const grpcCode = (err: unknown) => (err as { failure?: { grpcCode?: number } }).failure?.grpcCode;

describe("Authorize", () => {
  it("allows a valid key and returns quota values that include this request", async () => {
    t = Date.UTC(2026, 0, 15, 12, 0, 0);
    const { apiKey, accountId, keyId } = await qm.admin.accountWithKey({
      daily: 10,
      monthly: 100,
      burst: HIGH_BURST,
    });
    const first = await qm.meter.authorize(apiKey);
    expect(first).toMatchObject({
      decision: "DECISION_ALLOW",
      accountId,
      keyId,
      metered: true,
      dayWindow: "2026-01-15",
      monthWindow: "2026-01",
      quota: { dayLimit: 10, dayUsed: 1, monthLimit: 100, monthUsed: 1 },
    });
    const second = await qm.meter.authorize(apiKey);
    expect(second.quota).toMatchObject({ dayUsed: 2, monthUsed: 2 });
  });

  it("omits a window's pair when that window is uncapped", async () => {
    const dayless = await qm.admin.accountWithKey({ daily: 0, monthly: 50, burst: HIGH_BURST });
    const q1 = (await qm.meter.authorize(dayless.apiKey)).quota;
    expect(q1?.dayLimit).toBeUndefined();
    expect(q1?.dayUsed).toBeUndefined();
    expect(q1).toMatchObject({ monthLimit: 50, monthUsed: 1 });

    const uncapped = await qm.admin.accountWithKey({ daily: 0, monthly: 0, burst: HIGH_BURST });
    const res = await qm.meter.authorize(uncapped.apiKey);
    expect(res.decision).toBe("DECISION_ALLOW");
    expect(res.metered).toBe(true);
    expect(res.quota?.dayLimit).toBeUndefined();
    expect(res.quota?.monthLimit).toBeUndefined();
  });

  it("uses the configured plan (200,000 a day, 2,000,000 a month) when none is given", async () => {
    const { apiKey } = await qm.admin.accountWithKey({ burst: HIGH_BURST });
    const res = await qm.meter.authorize(apiKey);
    expect(res.quota).toMatchObject({ dayLimit: 200_000, dayUsed: 1, monthLimit: 2_000_000, monthUsed: 1 });
  });

  it("refuses past the daily cap without counting the refused calls, and resets at 00:00 UTC", async () => {
    t = Date.UTC(2026, 0, 15, 23, 59, 59, 999);
    const { apiKey } = await qm.admin.accountWithKey({ daily: 3, monthly: 100, burst: HIGH_BURST });
    for (let i = 1; i <= 3; i++) expect((await qm.meter.authorize(apiKey)).quota?.dayUsed).toBe(i);
    for (let i = 0; i < 3; i++) {
      const refused = await qm.meter.authorize(apiKey);
      expect(refused).toMatchObject({
        decision: "DECISION_DAILY_LIMIT_EXCEEDED",
        metered: false,
        // Still carries the values (spec 7), unchanged: refused calls do not count.
        quota: { dayLimit: 3, dayUsed: 3, monthLimit: 100, monthUsed: 3 },
      });
    }
    t = Date.UTC(2026, 0, 16, 0, 0, 0, 0);
    const nextDay = await qm.meter.authorize(apiKey);
    expect(nextDay).toMatchObject({
      decision: "DECISION_ALLOW",
      dayWindow: "2026-01-16",
      monthWindow: "2026-01",
      quota: { dayUsed: 1, monthUsed: 4 },
    });
  });

  it("refuses past the monthly cap and resets at 00:00 UTC on the 1st", async () => {
    t = Date.UTC(2026, 0, 31, 23, 59, 0);
    const { apiKey } = await qm.admin.accountWithKey({ daily: 0, monthly: 2, burst: HIGH_BURST });
    await qm.meter.authorize(apiKey);
    await qm.meter.authorize(apiKey);
    expect(await qm.meter.authorize(apiKey)).toMatchObject({
      decision: "DECISION_MONTHLY_LIMIT_EXCEEDED",
      quota: { monthLimit: 2, monthUsed: 2 },
    });
    t = Date.UTC(2026, 0, 31, 23, 59, 59, 999);
    expect((await qm.meter.authorize(apiKey)).decision).toBe("DECISION_MONTHLY_LIMIT_EXCEEDED");
    t = Date.UTC(2026, 1, 1, 0, 0, 0, 0);
    expect(await qm.meter.authorize(apiKey)).toMatchObject({
      decision: "DECISION_ALLOW",
      dayWindow: "2026-02-01",
      monthWindow: "2026-02",
      quota: { monthUsed: 1 },
    });
  });

  it("answers monthly_limit_exceeded when both windows are spent", async () => {
    t = Date.UTC(2026, 2, 10, 8, 0, 0);
    const { apiKey } = await qm.admin.accountWithKey({ daily: 2, monthly: 2, burst: HIGH_BURST });
    await qm.meter.authorize(apiKey);
    await qm.meter.authorize(apiKey);
    expect((await qm.meter.authorize(apiKey)).decision).toBe("DECISION_MONTHLY_LIMIT_EXCEEDED");
  });

  it("shares the volume across every key of the account", async () => {
    const account = await qm.admin.account({ daily: 3, monthly: 100, burst: HIGH_BURST });
    const a = await qm.admin.key(account.id);
    const b = await qm.admin.key(account.id);
    const decisions = [];
    for (const key of [a, b, a, b, a, b]) decisions.push((await qm.meter.authorize(key.apiKey)).decision);
    expect(decisions.filter((d) => d === "DECISION_ALLOW")).toHaveLength(3);
    expect(decisions.slice(3).every((d) => d === "DECISION_DAILY_LIMIT_EXCEEDED")).toBe(true);
  });

  it("refuses an inactive subscription with SUBSCRIPTION_INACTIVE until it is active again", async () => {
    const { apiKey, accountId } = await qm.admin.accountWithKey({ burst: HIGH_BURST });
    for (const status of ["past_due", "canceled", "suspended"]) {
      await qm.admin.update(accountId, { status });
      const res = await qm.meter.authorize(apiKey);
      expect(res).toMatchObject({ decision: "DECISION_SUBSCRIPTION_INACTIVE", accountId, metered: false });
      expect(res.quota).toBeNull();
    }
    await qm.admin.update(accountId, { status: "active" });
    expect((await qm.meter.authorize(apiKey)).decision).toBe("DECISION_ALLOW");
  });

  it("refuses unknown, malformed and revoked keys with INVALID_KEY", async () => {
    const { apiKey, accountId, keyId } = await qm.admin.accountWithKey({ burst: HIGH_BURST });
    const unknown = `tg_live_${"A".repeat(43)}`;
    for (const bad of [unknown, "", "not-a-key", `${apiKey}x`, apiKey.toUpperCase()]) {
      const res = await qm.meter.authorize(bad);
      expect(res).toMatchObject({ decision: "DECISION_INVALID_KEY", metered: false, accountId: "" });
    }
    expect((await qm.meter.authorize(apiKey)).decision).toBe("DECISION_ALLOW");
    const revoked = await qm.admin.revoke(accountId, keyId);
    expect(revoked.key?.revokedAt).not.toBe("");
    expect((await qm.meter.authorize(apiKey)).decision).toBe("DECISION_INVALID_KEY");
  });

  it("trips the burst guard with RATE_LIMITED and does not count burst-refused calls", async () => {
    t = Date.UTC(2026, 3, 1, 10, 0, 0);
    const { apiKey } = await qm.admin.accountWithKey({ daily: 100, monthly: 1000, burst: 5 });
    const first = [];
    for (let i = 0; i < 8; i++) first.push(await qm.meter.authorize(apiKey));
    expect(first.map((r) => r.decision)).toEqual([
      ...Array(5).fill("DECISION_ALLOW"),
      ...Array(3).fill("DECISION_RATE_LIMITED"),
    ]);
    expect(first[7]).toMatchObject({ metered: false, quota: { dayUsed: 5 } });
    // A second later the bucket has refilled; the refused calls were never counted.
    t += 1_000;
    expect(await qm.meter.authorize(apiKey)).toMatchObject({
      decision: "DECISION_ALLOW",
      quota: { dayUsed: 6 },
    });
    // Sustained: 5 per second.
    t += 200;
    expect((await qm.meter.authorize(apiKey)).decision).toBe("DECISION_ALLOW");
  });

  it("gives a failed call's unit back once (refund), even when the report is resent", async () => {
    t = Date.UTC(2026, 4, 5, 9, 0, 0);
    const { apiKey, accountId, keyId } = await qm.admin.accountWithKey({
      daily: 2,
      monthly: 10,
      burst: HIGH_BURST,
    });
    const ok = await qm.meter.authorize(apiKey, "req-refund-1");
    await qm.meter.authorize(apiKey, "req-refund-2");
    expect((await qm.meter.authorize(apiKey)).decision).toBe("DECISION_DAILY_LIMIT_EXCEEDED");
    const record = {
      requestId: "req-refund-1",
      accountId,
      keyId,
      endpoint: "/api/chain/block-number",
      network: "ethereum",
      status: 502,
      latencyMs: 12.5,
      time: new Date(t).toISOString(),
      refund: true,
      dayWindow: ok.dayWindow,
      monthWindow: ok.monthWindow,
    };
    expect((await qm.meter.report([record])).accepted).toBe(1);
    expect((await qm.meter.report([record])).accepted).toBe(1);
    expect(await qm.meter.authorize(apiKey)).toMatchObject({
      decision: "DECISION_ALLOW",
      quota: { dayUsed: 2 },
    });
    expect((await qm.meter.authorize(apiKey)).decision).toBe("DECISION_DAILY_LIMIT_EXCEEDED");
  });

  it("counts decisions in quota_authorize_total", async () => {
    expect(
      await metric(qm.handle.metricsPort, "quota_authorize_total", { decision: "allow" }),
    ).toBeGreaterThan(0);
    expect(
      await metric(qm.handle.metricsPort, "quota_authorize_total", { decision: "invalid_key" }),
    ).toBeGreaterThan(0);
  });
});

describe("keys", () => {
  it("are stored only as HMAC-SHA256 hashes: no plaintext key anywhere in Redis", async () => {
    const { apiKey, accountId } = await qm.admin.accountWithKey({ burst: HIGH_BURST });
    await qm.meter.authorize(apiKey);
    const client = await redis();
    try {
      const secretPart = apiKey.slice("tg_live_".length);
      let scanned = 0;
      let sawHash = false;
      const expectedHash = createHmac("sha256", "test-pepper").update(apiKey).digest("hex");
      for await (const keys of client.scanIterator({ MATCH: `${qm.config.redisPrefix}*`, COUNT: 1000 })) {
        for (const key of keys) {
          scanned++;
          const type = await client.type(key);
          let content = key;
          if (type === "hash") content += JSON.stringify(await client.hGetAll(key));
          else if (type === "string") content += String(await client.get(key));
          else if (type === "zset") content += JSON.stringify(await client.zRange(key, 0, -1));
          expect(content).not.toContain(secretPart);
          if (content.includes(expectedHash)) sawHash = true;
        }
      }
      expect(scanned).toBeGreaterThan(3);
      expect(sawHash).toBe(true);
    } finally {
      await client.close();
    }
    // Listed with prefix and creation time only; the secret never comes back.
    const listed = await qm.admin.list(accountId);
    expect(listed.keys).toHaveLength(1);
    expect(listed.keys[0]?.prefix).toBe(apiKey.slice(0, 12));
    expect(JSON.stringify(listed)).not.toContain(apiKey.slice(12));
  });

  it("are high-entropy, well-formed and distinct", async () => {
    const account = await qm.admin.account();
    const keys = await Promise.all(Array.from({ length: 5 }, () => qm.admin.key(account.id)));
    for (const k of keys) expect(k.apiKey).toMatch(/^tg_live_[A-Za-z0-9_-]{43}$/);
    expect(new Set(keys.map((k) => k.apiKey)).size).toBe(5);
  });
});

describe("admin API", () => {
  it("refuses a missing or wrong operator token", async () => {
    const addr = `127.0.0.1:${qm.handle.grpcPort}`;
    for (const token of [undefined, "wrong-token", ""]) {
      const admin = adminClient(addr, token);
      try {
        await expect(admin.account()).rejects.toSatisfy(
          (err) => grpcCode(err) === grpc.status.UNAUTHENTICATED,
        );
      } finally {
        admin.close();
      }
    }
  });

  it("is refused entirely when no operator token is configured", async () => {
    const noToken = await startTestMeter({ operatorToken: undefined });
    try {
      const admin = adminClient(`127.0.0.1:${noToken.handle.grpcPort}`, "anything");
      await expect(admin.account()).rejects.toSatisfy(
        (err) => grpcCode(err) === grpc.status.PERMISSION_DENIED,
      );
      admin.close();
    } finally {
      await noToken.stop();
    }
  });

  it("raises caps per account and validates input", async () => {
    const { apiKey, accountId } = await qm.admin.accountWithKey({ daily: 1, burst: HIGH_BURST });
    await qm.meter.authorize(apiKey);
    expect((await qm.meter.authorize(apiKey)).decision).toBe("DECISION_DAILY_LIMIT_EXCEEDED");
    const updated = await qm.admin.update(accountId, { dailyLimit: 500_000, monthlyLimit: 0 });
    expect(updated.account).toMatchObject({ dailyLimit: 500_000, monthlyLimit: 0, status: "active" });
    expect((await qm.meter.authorize(apiKey)).quota).toMatchObject({ dayLimit: 500_000, dayUsed: 2 });
    await expect(qm.admin.update(accountId, { status: "paused" })).rejects.toSatisfy(
      (err) => grpcCode(err) === grpc.status.INVALID_ARGUMENT,
    );
    await expect(qm.admin.get("acct_missing")).rejects.toSatisfy(
      (err) => grpcCode(err) === grpc.status.NOT_FOUND,
    );
  });
});
