// quota-meter honours its caller's gRPC deadline: a grant Redis gives after the caller stopped
// waiting goes straight back, even when the caller never releases it. quota-meter reaches the
// machine's real Redis through a TCP proxy this file controls (a stand-in for a slow link: it
// holds the bytes), with a Redis budget longer than the caller's deadline (no fail-open).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sleep, until } from "../support/eventually.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";
import { metric, REDIS_PORT, startTestMeter, type TestMeter, waitFor } from "./helpers.ts";

let proxy: Awaited<ReturnType<typeof tcpProxy>>;
let qm: TestMeter;

beforeAll(async () => {
  proxy = await tcpProxy(REDIS_PORT);
  qm = await startTestMeter({ redisUrl: proxy.url("redis"), redisBudgetMs: 5_000, redisMaxWaitMs: 5_000 });
});

afterAll(async () => {
  await qm?.stop();
  await proxy?.close();
});

describe("an Authorize whose caller's deadline passed (stand-in: a TCP proxy holding quota-meter's Redis bytes)", () => {
  it("gives back what Redis granted after the deadline: the next grant is numbered right after the last one served", async () => {
    const { apiKey } = await qm.admin.accountWithKey({ daily: 1_000, burst: 1_000_000 });
    const authorize = (deadlineMs: number, leaseUnits = 1) =>
      qm.meter.raw.call(
        "Authorize",
        { requestId: "r", apiKey, endpoint: "/api/chain/chain-id", network: "ethereum", leaseUnits },
        { deadlineMs },
      );
    expect((await authorize(5_000)).quota?.dayUsed).toBe(1);

    proxy.stall();
    // No authorization id: only quota-meter itself can give these 8 units back. (4: DEADLINE_EXCEEDED)
    const late = expect(authorize(1_000, 8)).rejects.toMatchObject({ failure: { grpcCode: 4 } });
    await until("quota-meter sent the grant's Redis command", () => proxy.held > 0);
    // time-based: holds the link past quota-meter's deadline for the call (it had the call before its
    // Redis command reached the proxy, so its deadline passes within 1 s of that): the grant then
    // reaches it late, the subject.
    await sleep(1_500);
    await late;
    await proxy.restore();

    // The late grant counted 8 and went straight back; the next one is unit 2.
    await waitFor(
      async () =>
        (await metric(qm.handle.metricsPort, "quota_redis_seconds_count", { op: "lease-return" })) >= 1,
    );
    expect((await authorize(5_000)).quota?.dayUsed).toBe(2);
  });
});
