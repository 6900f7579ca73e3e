import { randomUUID } from "node:crypto";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { prom } from "@tollgate/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createEventConsumer,
  type DeliveryInfo,
  ensureStreams,
  natsSubject,
  SETTLEMENT_V1,
  type SettlementEventV1,
  streamSpecFor,
} from "../../libs/events/src/index.ts";
import { deleteStreams, NATS_PORT, silentLogger, uniqueId, waitFor } from "../quota-meter/helpers.ts";

const NATS_URL = `nats://127.0.0.1:${NATS_PORT}`;
const namespace = uniqueId("evcon");
const subject = natsSubject(SETTLEMENT_V1, namespace);
let nc: NatsConnection;

beforeAll(async () => {
  nc = await connect({ servers: NATS_URL });
  await ensureStreams(nc, { namespace });
});

afterAll(async () => {
  await nc?.close();
  await deleteStreams(namespace);
});

function settlement(overrides: Partial<SettlementEventV1> = {}): SettlementEventV1 {
  return {
    id: randomUUID(),
    request_id: randomUUID(),
    endpoint: "/api/chain/call",
    network: "ethereum",
    scheme: "exact",
    payer: "0x0000000000000000000000000000000000000001",
    amount: "5000",
    asset: "0x0000000000000000000000000000000000000002",
    payment_network: "eip155:84532",
    transaction: "0xabc",
    outcome: "settled",
    reason: null,
    time: new Date().toISOString(),
    ...overrides,
  };
}

async function publishRaw(payload: string, msgID = randomUUID()) {
  await jetstream(nc).publish(subject, payload, { msgID });
}

describe("@tollgate/events consumer", () => {
  it("hands validated events to the handler, acks on success, redelivers on failure, drops invalid payloads", async () => {
    const registry = new prom.Registry();
    const consumer = createEventConsumer({
      natsUrl: NATS_URL,
      service: "events-test",
      logger: silentLogger(),
      registry,
      namespace,
    });
    const seen: Array<{ event: SettlementEventV1; info: DeliveryInfo }> = [];
    let failOnce = true;
    try {
      consumer.consume(
        SETTLEMENT_V1,
        "settlement-test",
        async (event, info) => {
          if (event.outcome === "failed" && failOnce) {
            failOnce = false;
            throw new Error("transient");
          }
          seen.push({ event, info });
        },
        { retryDelayMs: 100 },
      );
      const ok = settlement();
      const flaky = settlement({ outcome: "failed", transaction: null, reason: "reverted" });
      await publishRaw(JSON.stringify(ok));
      await publishRaw(JSON.stringify(flaky));
      await publishRaw("{not json");
      await publishRaw(JSON.stringify({ ...settlement(), amount: "1.5" }));

      await waitFor(async () => seen.length >= 2, 15_000);
      expect(seen.map((s) => s.event.id)).toEqual([ok.id, flaky.id]);
      expect(seen[0]?.info.deliveryCount).toBe(1);
      expect(seen[1]?.info.deliveryCount).toBe(2);
      expect(seen[1]?.event).toEqual(flaky);

      // Everything is acked or terminated: nothing left pending on the durable.
      const jsm = await jetstreamManager(nc);
      const stream = streamSpecFor(SETTLEMENT_V1, namespace).name;
      await waitFor(async () => {
        const info = await jsm.consumers.info(stream, "settlement-test");
        return info.num_ack_pending === 0 && info.num_pending === 0;
      }, 10_000);
      const text = await registry.metrics();
      expect(text).toMatch(
        /events_consumed_total\{consumer="settlement-test",subject="tollgate.settlement.v1",result="ok"\} 2/,
      );
      expect(text).toMatch(/result="retry"\} 1/);
      expect(text).toMatch(/result="invalid"\} 2/);
    } finally {
      await consumer.close();
    }
  });

  it("hands events to a group handler several at a time, and redelivers a whole group whose handler failed", async () => {
    const consumer = createEventConsumer({
      natsUrl: NATS_URL,
      service: "events-test",
      logger: silentLogger(),
      namespace,
    });
    const groups: string[][] = [];
    let failures = 1;
    const durable = uniqueId("group-test");
    try {
      // A durable made now starts at the stream's beginning: publish first, so all 40 are waiting.
      const events = Array.from({ length: 40 }, () => settlement());
      for (const e of events) await publishRaw(JSON.stringify(e));
      consumer.consumeBatches(
        SETTLEMENT_V1,
        durable,
        async (group) => {
          if (failures-- > 0) throw new Error("database blinked");
          groups.push(group.map((g) => g.event.id));
        },
        { maxEvents: 16, maxWaitMs: 200, retryDelayMs: 100 },
      );
      const wanted = new Set(events.map((e) => e.id));
      await waitFor(async () => [...wanted].every((id) => groups.some((g) => g.includes(id))), 15_000);
      // Every event was handled in a group of at most 16, and far fewer calls than events.
      expect(groups.every((g) => g.length <= 16)).toBe(true);
      expect(groups.length).toBeLessThan(20);
      // The failed group came back: each of the 40 handled, none of them twice.
      const handled = groups.flat().filter((id) => wanted.has(id));
      expect(handled.length).toBe(40);
      expect(new Set(handled).size).toBe(40);
    } finally {
      await consumer.close();
    }
  });

  it("resumes a durable where it left off", async () => {
    const received: string[] = [];
    const first = createEventConsumer({
      natsUrl: NATS_URL,
      service: "events-test",
      logger: silentLogger(),
      namespace,
    });
    first.consume(SETTLEMENT_V1, "resume-test", async (e) => {
      received.push(e.id);
    });
    const a = settlement();
    await publishRaw(JSON.stringify(a));
    await waitFor(async () => received.includes(a.id), 10_000);
    await first.close();

    const b = settlement();
    await publishRaw(JSON.stringify(b));
    const second = createEventConsumer({
      natsUrl: NATS_URL,
      service: "events-test",
      logger: silentLogger(),
      namespace,
    });
    try {
      second.consume(SETTLEMENT_V1, "resume-test", async (e) => {
        received.push(e.id);
      });
      await waitFor(async () => received.includes(b.id), 10_000);
      // Everything published before the durable existed, then `a` once and `b` once.
      expect(received.filter((id) => id === a.id)).toHaveLength(1);
      expect(received.filter((id) => id === b.id)).toHaveLength(1);
    } finally {
      await second.close();
    }
  });
});
