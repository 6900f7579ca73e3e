// A key revocation whose Redis answer was lost: the revocation is written to Redis inside the
// PostgreSQL transaction, so a lost answer rolled the records back while Redis had revoked the key
// (the key refused everywhere, the dashboard showing it live, a replace answered failed with its new
// key's secret never shown). quota-meter reaches the machine's Redis through a TCP proxy this file
// controls (the stand-in for a network path that drops).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../support/eventually.ts";
import { testRedis } from "../support/redis.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";
import { REDIS_PORT, startTestMeter, type TestMeter } from "./helpers.ts";

let proxy: Awaited<ReturnType<typeof tcpProxy>>;
let qm: TestMeter;
const redis = testRedis("test:revoke-lost-reader:");

beforeAll(async () => {
  proxy = await tcpProxy(REDIS_PORT);
  qm = await startTestMeter({ redisUrl: proxy.url("redis"), redisStandIn: false });
});

afterAll(async () => {
  await qm?.stop();
  await proxy?.close();
});

describe("key revocation whose Redis answer was lost (the reply to its MULTI/EXEC held, then the link cut by a TCP proxy in front of the machine's Redis)", () => {
  it("is run again once Redis answers: revoked in the records and in Redis alike, the key refused", async () => {
    const { accountId, keyId, apiKey } = await qm.admin.accountWithKey({ burst: 1_000 });
    expect(await qm.meter.authorize(apiKey)).toMatchObject({ decision: "DECISION_ALLOW" });
    proxy.holdRepliesTo("EXEC");
    const revoking = qm.admin.revoke(accountId, keyId);
    const hotKey = `${qm.config.redisPrefix}key:${keyId}`;
    await until("Redis ran the revocation", async () => !!(await redis.hGet(hotKey, "revoked")), 10_000, 10);
    await proxy.cut();
    // time-based: the link stays cut a while, the outage the revocation's lost reply lives through.
    setTimeout(() => void proxy.restore(), 300);
    const revoked = (await revoking).key;
    expect(revoked?.id).toBe(keyId);
    expect(revoked?.revokedAt).not.toBe("");
    // The records agree with Redis: the key is listed revoked, and it is refused.
    const listed = (await qm.admin.list(accountId)).keys.find((k: { id: string }) => k.id === keyId);
    expect(listed?.revokedAt).toBe(revoked?.revokedAt);
    expect((await qm.meter.authorize(apiKey)).decision).not.toBe("DECISION_ALLOW");
  });
});
