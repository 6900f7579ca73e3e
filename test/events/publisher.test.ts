import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { prom } from "@tollgate/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createEventPublisher,
  ensureStreams,
  natsSubject,
  SETTLEMENT_V1,
  type SettlementEventV1,
  STREAMS,
  streamSpecFor,
  USAGE_V1,
  USAGE_V2,
  type UsageEventV1,
} from "../../libs/events/src/index.ts";
import { Outbox } from "../../libs/events/src/outbox.ts";
import {
  capturingLogger,
  deleteStreams,
  NATS_PORT,
  silentLogger,
  uniqueId,
  waitFor,
} from "../quota-meter/helpers.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";

const NATS_URL = `nats://127.0.0.1:${NATS_PORT}`;
const namespace = uniqueId("evpub");
const usageStream = streamSpecFor(USAGE_V1, namespace).name;
let nc: NatsConnection;
let dir: string;

beforeAll(async () => {
  nc = await connect({ servers: NATS_URL });
  dir = mkdtempSync(join(tmpdir(), "events-test-"));
});

afterAll(async () => {
  await nc?.close();
  await deleteStreams(namespace);
  rmSync(dir, { recursive: true, force: true });
});

function usageEvent(overrides: Partial<UsageEventV1> = {}): UsageEventV1 {
  const id = randomUUID();
  return {
    id,
    request_id: id,
    account_id: "acct_test",
    key_id: "key_test",
    endpoint: "/api/chain/block-number",
    network: "ethereum",
    status: 200,
    latency_ms: 3.2,
    time: new Date().toISOString(),
    ...overrides,
  };
}

/** Every message id stored in a stream, in order. */
async function storedIds(stream: string): Promise<string[]> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(stream);
  const ids: string[] = [];
  const consumer = await jetstream(nc).consumers.get(stream);
  const batch = await consumer.fetch({ max_messages: Math.max(1, info.state.messages), expires: 2_000 });
  for await (const m of batch) {
    ids.push(m.json<UsageEventV1>().id);
    if (ids.length >= info.state.messages) break;
  }
  return ids;
}

async function purge(stream: string) {
  const jsm = await jetstreamManager(nc);
  await ensureStreams(jsm, { namespace });
  await jsm.streams.purge(stream);
}

describe("@tollgate/events publisher", () => {
  it("creates durable streams: file storage, a duplicate window of at least an hour", async () => {
    const names = await ensureStreams(nc, { namespace });
    expect(names.sort()).toEqual(STREAMS.map((s) => `${s.name}_${namespace.toUpperCase()}`).sort());
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(usageStream);
    expect(info.config.storage).toBe("file");
    expect(info.config.subjects).toEqual([
      natsSubject(USAGE_V1, namespace),
      natsSubject(USAGE_V2, namespace),
    ]);
    expect(info.config.duplicate_window).toBeGreaterThanOrEqual(3_600 * 1e9);
    // Idempotent.
    await ensureStreams(nc, { namespace });
  });

  it("validates, publishes with the event id as Nats-Msg-Id, and reports metrics", async () => {
    await purge(usageStream);
    const registry = new prom.Registry();
    const publisher = createEventPublisher({
      natsUrl: NATS_URL,
      service: "events-test",
      outboxDir: join(dir, "basic"),
      logger: silentLogger(),
      registry,
      namespace,
    });
    try {
      const events = Array.from({ length: 20 }, () => usageEvent());
      for (const e of events) publisher.publish(USAGE_V1, e);
      // The same event again (a caller retry) is stored once.
      publisher.publish(USAGE_V1, events[0] as UsageEventV1);
      expect(await publisher.flush(10_000)).toBe(true);
      expect(publisher.pending()).toBe(0);
      expect((await storedIds(usageStream)).sort()).toEqual(events.map((e) => e.id).sort());

      expect(() => publisher.publish(USAGE_V1, { ...usageEvent(), status: "ok" } as never)).toThrow();
      expect(() => publisher.publish(USAGE_V1, { ...usageEvent(), time: "yesterday" })).toThrow();
      const settlement: SettlementEventV1 = {
        id: randomUUID(),
        request_id: "r1",
        endpoint: "/api/chain/call",
        network: "ethereum",
        scheme: "exact",
        payer: "0x0000000000000000000000000000000000000001",
        amount: "5000",
        asset: "0x0000000000000000000000000000000000000002",
        payment_network: "eip155:84532",
        transaction: null,
        outcome: "settled",
        reason: null,
        time: new Date().toISOString(),
      };
      expect(() => publisher.publish(SETTLEMENT_V1, { ...settlement, amount: "0.005" })).toThrow();
      publisher.publish(SETTLEMENT_V1, settlement);
      expect(await publisher.flush(10_000)).toBe(true);

      const text = await registry.metrics();
      expect(text).toMatch(
        /events_published_total\{publisher="events-test",subject="tollgate.usage.v1"\} 21/,
      );
      expect(text).toMatch(
        /events_publish_duplicates_total\{publisher="events-test",subject="tollgate.usage.v1"\} 1/,
      );
      expect(text).toMatch(/events_outbox_depth\{publisher="events-test"\} 0/);
    } finally {
      await publisher.close();
    }
  });

  it("NATS cut mid-run: every event of the run arrives exactly once after it returns", async () => {
    await purge(usageStream);
    const proxy = await tcpProxy(NATS_PORT);
    const log = capturingLogger("events-test");
    const registry = new prom.Registry();
    const publisher = createEventPublisher({
      natsUrl: proxy.url("nats"),
      service: "events-test",
      outboxDir: join(dir, "cut"),
      logger: log.logger,
      registry,
      namespace,
      publishTimeoutMs: 1_000,
      reconnectWaitMs: 100,
    });
    const published: string[] = [];
    const publishSome = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const e = usageEvent();
        publisher.publish(USAGE_V1, e);
        published.push(e.id);
        // time-based: yields a turn every 25 publishes, so the publisher's sends go out meanwhile.
        if (i % 25 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    };
    try {
      await publishSome(300);
      // Cut once delivery is under way, while publishes are still in flight: some may be
      // stored with their ack lost.
      await waitFor(async () => publisher.pending() < 300, 10_000, 1);
      await proxy.cut();
      await publishSome(300);
      // time-based: a window, not a wait for a result: the publisher must keep holding them (and say so once)
      // through several reconnect attempts; nothing would mark "none were sent" sooner.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(publisher.pending()).toBeGreaterThanOrEqual(300);
      expect(await registry.metrics()).toMatch(/events_outbox_depth\{publisher="events-test"\} [1-9]/);
      expect(log.lines().filter((l) => String(l.msg).includes("held locally"))).toHaveLength(1);

      await proxy.restore();
      expect(await publisher.flush(30_000)).toBe(true);
      const ids = await storedIds(usageStream);
      expect(ids).toHaveLength(600);
      expect(new Set(ids).size).toBe(600);
      expect(new Set(ids)).toEqual(new Set(published));
    } finally {
      await publisher.close();
      await proxy.close();
    }
  });

  it("NATS unreachable at startup: one plain log line, events held locally, delivered once reachable", async () => {
    await purge(usageStream);
    const proxy = await tcpProxy(NATS_PORT);
    await proxy.cut();
    const log = capturingLogger("events-test");
    const publisher = createEventPublisher({
      natsUrl: proxy.url("nats"),
      service: "events-test",
      outboxDir: join(dir, "startup"),
      logger: log.logger,
      namespace,
      reconnectWaitMs: 100,
    });
    try {
      const events = Array.from({ length: 50 }, () => usageEvent());
      for (const e of events) publisher.publish(USAGE_V1, e);
      expect(publisher.pending()).toBe(50);
      // time-based: several reconnect attempts go by; the log says it once (a window in which a second line
      // must not appear: nothing to wait for instead).
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const held = log.lines().filter((l) => String(l.msg).includes("held locally"));
      expect(held).toHaveLength(1);
      expect(held[0]?.msg).toMatch(
        /^NATS is unreachable at nats:\/\/127\.0\.0\.1:\d+: events are held locally in .+ until NATS is reachable$/,
      );
      expect(publisher.pending()).toBe(50);

      await proxy.restore();
      expect(await publisher.flush(20_000)).toBe(true);
      expect((await storedIds(usageStream)).sort()).toEqual(events.map((e) => e.id).sort());
    } finally {
      await publisher.close();
      await proxy.close();
    }
  });

  it("keeps undelivered events across a restart and replays them without duplicates", async () => {
    await purge(usageStream);
    const outboxDir = join(dir, "restart");
    const proxy = await tcpProxy(NATS_PORT);
    await proxy.cut();
    const first = createEventPublisher({
      natsUrl: proxy.url("nats"),
      service: "events-test",
      outboxDir,
      logger: silentLogger(),
      namespace,
      closeFlushMs: 100,
    });
    const events = Array.from({ length: 40 }, () => usageEvent());
    for (const e of events) first.publish(USAGE_V1, e);
    await first.close();
    await proxy.close();

    // A crash after delivery but before the ack reached the journal: those events are
    // still "pending" in the journal and will be published again.
    const delivered = events.slice(0, 10);
    const js = jetstream(nc);
    for (const e of delivered) {
      await js.publish(natsSubject(USAGE_V1, namespace), JSON.stringify(e), { msgID: e.id });
    }

    const second = createEventPublisher({
      natsUrl: NATS_URL,
      service: "events-test",
      outboxDir,
      logger: silentLogger(),
      namespace,
    });
    try {
      expect(second.pending()).toBe(40);
      expect(await second.flush(20_000)).toBe(true);
      const ids = await storedIds(usageStream);
      expect(ids).toHaveLength(40);
      expect(new Set(ids)).toEqual(new Set(events.map((e) => e.id)));
    } finally {
      await second.close();
    }
  });

  it("replays a journal written by a process that crashed (torn last line included)", async () => {
    await purge(usageStream);
    const outboxDir = join(dir, "crashed");
    const outbox = new Outbox(outboxDir, silentLogger());
    const events = Array.from({ length: 5 }, () => usageEvent());
    for (const e of events) outbox.append(USAGE_V1, e.id, JSON.stringify(e));
    outbox.ack(1);
    outbox.close();
    const { appendFileSync } = await import("node:fs");
    appendFileSync(join(outboxDir, "journal.ndjson"), '{"s":99,"t":"tollgate.usa');

    const publisher = createEventPublisher({
      natsUrl: NATS_URL,
      service: "events-test",
      outboxDir,
      logger: silentLogger(),
      namespace,
    });
    try {
      expect(publisher.pending()).toBe(4);
      expect(await publisher.flush(10_000)).toBe(true);
      expect((await storedIds(usageStream)).sort()).toEqual(
        events
          .slice(1)
          .map((e) => e.id)
          .sort(),
      );
    } finally {
      await publisher.close();
    }
  });

  it("refuses to share one outbox directory between two publishers", async () => {
    const outboxDir = join(dir, "shared");
    const a = createEventPublisher({
      natsUrl: NATS_URL,
      service: "a",
      outboxDir,
      logger: silentLogger(),
      namespace,
    });
    try {
      expect(() =>
        createEventPublisher({
          natsUrl: NATS_URL,
          service: "b",
          outboxDir,
          logger: silentLogger(),
          namespace,
        }),
      ).toThrow(/already open/);
    } finally {
      await a.close();
    }
    await waitFor(async () => true);
  });
});
