import { randomUUID } from "node:crypto";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { grpc } from "@tollgate/platform";
import type { UsageRecord } from "@tollgate/platform/generated/tollgate/quota/v1/UsageRecord";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  natsSubject,
  streamSpecFor,
  USAGE_V1,
  USAGE_V2,
  type UsageBatchV2,
  type UsageCallV2,
  type UsageEventV1,
} from "../../libs/events/src/index.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";
import { metric, NATS_PORT, startTestMeter, type TestMeter, waitFor } from "./helpers.ts";

// quota-meter reaches the machine's real NATS through a TCP proxy this file controls, so
// the link can be cut without stopping the server other suites use.
let proxy: Awaited<ReturnType<typeof tcpProxy>>;
let qm: TestMeter;
let nc: NatsConnection;
const t = Date.UTC(2026, 5, 10, 12, 0, 0);
const now = () => t;

beforeAll(async () => {
  proxy = await tcpProxy(NATS_PORT);
  qm = await startTestMeter({ natsUrl: proxy.url("nats") }, { now });
  nc = await connect({ servers: `nats://127.0.0.1:${NATS_PORT}` });
});

afterAll(async () => {
  await nc?.close();
  await qm?.stop();
  await proxy?.close();
});

const stream = () => streamSpecFor(USAGE_V1, qm.config.eventsNamespace).name;

/** The usage batches stored in the stream, and the calls in them, for one account. */
async function stored(accountId: string): Promise<{ batches: UsageBatchV2[]; calls: UsageCallV2[] }> {
  const none = { batches: [], calls: [] };
  const jsm = await jetstreamManager(nc);
  // The publisher creates the stream on connect; until then there is nothing stored.
  const info = await jsm.streams.info(stream()).catch(() => undefined);
  if (!info || info.state.messages === 0) return none;
  const consumer = await jetstream(nc).consumers.get(stream());
  const batches: UsageBatchV2[] = [];
  const fetched = await consumer.fetch({ max_messages: info.state.messages, expires: 2_000 });
  let read = 0;
  for await (const m of fetched) {
    if (m.subject === natsSubject(USAGE_V2, qm.config.eventsNamespace)) {
      const b = m.json<UsageBatchV2>();
      if (b.calls.some((c) => c.account_id === accountId)) batches.push(b);
    }
    if (++read >= info.state.messages) break;
  }
  return { batches, calls: batches.flatMap((b) => b.calls.filter((c) => c.account_id === accountId)) };
}

function record(
  auth: { accountId: string; keyId: string; dayWindow: string; monthWindow: string },
  status = 200,
  refund = false,
): UsageRecord {
  return {
    requestId: randomUUID(),
    accountId: auth.accountId,
    keyId: auth.keyId,
    endpoint: "/api/chain/block-number",
    network: "ethereum",
    status,
    latencyMs: 4.5,
    time: new Date(t).toISOString(),
    refund,
    dayWindow: auth.dayWindow,
    monthWindow: auth.monthWindow,
  };
}

describe("usage events and GetUsage", () => {
  it("publishes one usage event per reported batch (never the key), named by the gateway's batch id, and counts it per day", async () => {
    const { apiKey, accountId, keyId } = await qm.admin.accountWithKey({ daily: 100, burst: 1_000_000 });
    const auth = await qm.meter.authorize(apiKey);
    const records = [record(auth), record(auth), record(auth, 502, true)];
    const batchId = randomUUID();
    expect((await qm.meter.report(records, batchId)).accepted).toBe(3);
    // The gateway resends the batch (its answer was lost): stored once, refunded once.
    expect((await qm.meter.report(records, batchId)).accepted).toBe(3);

    const { batches, calls } = await waitFor(async () => {
      const s = await stored(accountId);
      return s.calls.length >= 3 ? s : undefined;
    });
    expect(batches.map((b) => b.id)).toEqual([batchId]);
    expect(calls.map((c) => c.request_id).sort()).toEqual(records.map((r) => r.requestId).sort());
    expect(calls[0]).toMatchObject({
      account_id: accountId,
      key_id: keyId,
      endpoint: "/api/chain/block-number",
    });
    expect(JSON.stringify(batches)).not.toContain(apiKey);
    const jsm = await jetstreamManager(nc);
    expect((await jsm.streams.info(stream())).config.subjects).toEqual([
      natsSubject(USAGE_V1, qm.config.eventsNamespace),
      natsSubject(USAGE_V2, qm.config.eventsNamespace),
    ]);

    const usage = await waitFor(async () => {
      const u = await qm.meter.usage(apiKey, 3);
      return u.days.at(-1)?.requests === 3 ? u : undefined;
    });
    expect(usage.accountId).toBe(accountId);
    expect(usage.days).toEqual([
      { day: "2026-06-08", requests: 0, errors: 0 },
      { day: "2026-06-09", requests: 0, errors: 0 },
      { day: "2026-06-10", requests: 3, errors: 1 },
    ]);
    // The refunded call gave its unit back: 1 counted, 1 refunded → 0 used.
    expect(usage.quota).toMatchObject({ dayLimit: 100, dayUsed: 0 });
  });

  it("counts each batch once, even when it is stored and delivered twice", async () => {
    const { apiKey, accountId, keyId } = await qm.admin.accountWithKey({ burst: 1_000_000 });
    const call = {
      request_id: "r",
      account_id: accountId,
      key_id: keyId,
      endpoint: "/api/chain/chain-id",
      network: "sepolia",
      status: 200,
      latency_ms: 1,
      time: new Date(t).toISOString(),
    };
    const batch = {
      id: randomUUID(),
      calls: [call, { ...call, request_id: "s", status: 503 }],
    } satisfies UsageBatchV2;
    const js = jetstream(nc);
    const subject = natsSubject(USAGE_V2, qm.config.eventsNamespace);
    // Two stored copies (different message ids, as after the stream's duplicate window).
    await js.publish(subject, JSON.stringify(batch), { msgID: `${batch.id}-a` });
    await js.publish(subject, JSON.stringify(batch), { msgID: `${batch.id}-b` });
    await waitFor(
      async () =>
        (await metric(qm.handle.metricsPort, "quota_usage_events_total", { result: "duplicate" })) > 0,
    );
    expect((await qm.meter.usage(apiKey, 1)).days).toEqual([{ day: "2026-06-10", requests: 2, errors: 1 }]);
  });

  it("still counts per-call v1 events (journals written before the upgrade), once each", async () => {
    const { apiKey, accountId, keyId } = await qm.admin.accountWithKey({ burst: 1_000_000 });
    const e = {
      id: randomUUID(),
      request_id: "r",
      account_id: accountId,
      key_id: keyId,
      endpoint: "/api/chain/chain-id",
      network: "sepolia",
      status: 200,
      latency_ms: 1,
      time: new Date(t).toISOString(),
    } satisfies UsageEventV1;
    const js = jetstream(nc);
    const subject = natsSubject(USAGE_V1, qm.config.eventsNamespace);
    await js.publish(subject, JSON.stringify(e), { msgID: `${e.id}-a` });
    await js.publish(subject, JSON.stringify(e), { msgID: `${e.id}-b` });
    await waitFor(async () => (await qm.meter.usage(apiKey, 1)).days[0]?.requests === 1);
    // time-based: proves the duplicate is NOT counted: a moment for it to be folded if it were.
    await new Promise((r) => setTimeout(r, 300));
    expect((await qm.meter.usage(apiKey, 1)).days).toEqual([{ day: "2026-06-10", requests: 1, errors: 0 }]);
  });

  it("NATS cut mid-test: every call of the run arrives in the stream exactly once after it returns", async () => {
    const { apiKey, accountId } = await qm.admin.accountWithKey({ daily: 0, monthly: 0, burst: 1_000_000 });
    const sent: string[] = [];
    const reportBatch = async (n: number) => {
      const recs: UsageRecord[] = [];
      for (let i = 0; i < n; i++) recs.push(record(await qm.meter.authorize(apiKey)));
      expect((await qm.meter.report(recs)).accepted).toBe(n);
      sent.push(...recs.map((r) => r.requestId ?? ""));
    };
    await reportBatch(50);
    await proxy.cut();
    // The hot path is untouched by the outage, and reports are still accepted.
    for (let i = 0; i < 5; i++) await reportBatch(20);
    await waitFor(async () => (await metric(qm.handle.metricsPort, "events_outbox_depth")) > 0, 30_000);
    expect(await metric(qm.handle.metricsPort, "events_outbox_depth")).toBeGreaterThan(0);
    await proxy.restore();
    await reportBatch(50);

    const { batches, calls } = await waitFor(async () => {
      const s = await stored(accountId);
      return s.calls.length >= sent.length ? s : undefined;
    }, 30_000);
    expect(batches).toHaveLength(7);
    const ids = calls.map((c) => c.request_id);
    expect(ids).toHaveLength(200);
    expect(new Set(ids).size).toBe(200);
    expect(new Set(ids)).toEqual(new Set(sent));
    await waitFor(async () => (await metric(qm.handle.metricsPort, "events_outbox_depth")) === 0, 10_000);

    // And the consumer (also behind the cut link) counted each one exactly once.
    const usage = await waitFor(async () => {
      const u = await qm.meter.usage(apiKey, 1);
      return u.days[0]?.requests === 200 ? u : undefined;
    }, 20_000);
    expect(usage.days).toEqual([{ day: "2026-06-10", requests: 200, errors: 0 }]);
  });

  it("refuses records without a request id or an account id: no refund, no event, counted as rejected", async () => {
    const { apiKey, accountId } = await qm.admin.accountWithKey({ daily: 100, burst: 1_000_000 });
    const first = await qm.meter.authorize(apiKey);
    const second = await qm.meter.authorize(apiKey);
    expect(second.quota).toMatchObject({ dayUsed: 2 });
    const rejected = () => metric(qm.handle.metricsPort, "quota_usage_records_rejected_total");
    const before = await rejected();
    const res = await qm.meter.report([
      { ...record(first, 502, true), requestId: "" },
      { ...record(second, 503, true), accountId: "" },
    ]);
    expect(res.accepted).toBe(0);
    expect(await rejected()).toBe(before + 2);
    // Neither unit went back: both calls still count.
    expect((await qm.meter.usage(apiKey, 1)).quota).toMatchObject({ dayUsed: 2 });
    // And nothing reached the stream for the account.
    const ok = record(first);
    expect((await qm.meter.report([ok])).accepted).toBe(1);
    const { calls } = await waitFor(async () => {
      const s = await stored(accountId);
      return s.calls.length >= 1 ? s : undefined;
    });
    expect(calls.map((c) => c.request_id)).toEqual([ok.requestId]);
  });

  it("drops a record that does not fit the usage event alone: the rest of its batch is published and refunded", async () => {
    const { apiKey, accountId } = await qm.admin.accountWithKey({ daily: 100, burst: 1_000_000 });
    const calls = [
      await qm.meter.authorize(apiKey),
      await qm.meter.authorize(apiKey),
      await qm.meter.authorize(apiKey),
    ];
    expect(calls[2]?.quota).toMatchObject({ dayUsed: 3 });
    const rejected = () => metric(qm.handle.metricsPort, "quota_usage_records_rejected_total");
    const before = await rejected();
    const [a, b, c] = calls as [(typeof calls)[0], (typeof calls)[0], (typeof calls)[0]];
    const misfit = { ...record(a, 502, true), endpoint: `/${"x".repeat(300)}` };
    const refunded = record(b, 502, true);
    // Any RFC 3339 time is taken, stored as UTC.
    const offset = { ...record(c), time: "2026-06-10T14:00:00.000+02:00" };
    const res = await qm.meter.report([misfit, refunded, offset]);
    expect(res.accepted).toBe(2);
    expect(await rejected()).toBe(before + 1);
    // Only the fitting failed call gave its unit back.
    expect((await qm.meter.usage(apiKey, 1)).quota).toMatchObject({ dayUsed: 2 });
    const { calls: seen } = await waitFor(async () => {
      const s = await stored(accountId);
      return s.calls.length >= 2 ? s : undefined;
    });
    expect(seen.map((x) => [x.request_id, x.time])).toEqual([
      [refunded.requestId, new Date(t).toISOString()],
      [offset.requestId, "2026-06-10T12:00:00.000Z"],
    ]);
  });

  it("GetUsage answers like a chain call: inactive subscription refused, burst guard shared", async () => {
    const { apiKey, accountId } = await qm.admin.accountWithKey({ burst: 2 });
    expect((await qm.meter.usage(apiKey, 366)).days).toHaveLength(366);
    expect((await qm.meter.authorize(apiKey)).decision).toBe("DECISION_ALLOW");
    const failureOf = async (p: Promise<unknown>) => {
      try {
        await p;
      } catch (err) {
        return (err as { failure?: { grpcCode: number; code?: string } }).failure;
      }
      throw new Error("expected a failure");
    };
    // The burst (2 at once) is spent by one usage read and one chain call.
    expect(await failureOf(qm.meter.usage(apiKey, 1))).toMatchObject({
      grpcCode: grpc.status.RESOURCE_EXHAUSTED,
      code: "rate_limited",
    });
    await qm.admin.update(accountId, { status: "canceled" });
    expect(await failureOf(qm.meter.usage(apiKey, 1))).toMatchObject({
      grpcCode: grpc.status.PERMISSION_DENIED,
      code: "subscription_inactive",
    });
  });

  it("GetUsage refuses unknown keys with invalid_api_key", async () => {
    await expect(qm.meter.usage(`tg_live_${"C".repeat(43)}`)).rejects.toSatisfy(
      (err) =>
        (err as { failure?: { grpcCode: number; code?: string } }).failure?.grpcCode ===
          grpc.status.UNAUTHENTICATED &&
        (err as { failure?: { code?: string } }).failure?.code === "invalid_api_key",
    );
  });
});
