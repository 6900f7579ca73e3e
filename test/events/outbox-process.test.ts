// The event outbox of a real service process (quota-meter, started the way Kubernetes starts it) on a
// directory that outlives the process, what a StatefulSet's volume gives each pod: events accepted
// during a NATS outage survive a SIGKILL and a SIGTERM (which exits 0 within its deadline, leaving
// them in the journal), and the next process on the same directory delivers each exactly once.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { natsSubject, streamSpecFor, USAGE_V2, type UsageBatchV2 } from "@tollgate/events";
import { freePort, type RunningService, spawnService } from "@tollgate/local";
import { checkHealth } from "@tollgate/platform";
import type { UsageRecord } from "@tollgate/platform/generated/tollgate/quota/v1/UsageRecord";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  adminClient,
  cleanRedis,
  deleteStreams,
  meterClient,
  NATS_PORT,
  OPERATOR_TOKEN,
  uniqueId,
  waitFor,
} from "../quota-meter/helpers.ts";
import { MESH_CALLERS_ENV } from "../support/mesh.ts";
import { createTestDatabase, type TestDatabase } from "../support/postgres.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";

const id = uniqueId("outboxproc");
let database: TestDatabase;
let natsLink: Awaited<ReturnType<typeof tcpProxy>>;
let outboxDir: string;
let nc: NatsConnection;
const lines: string[] = [];

beforeAll(async () => {
  database = await createTestDatabase(id);
  natsLink = await tcpProxy(NATS_PORT);
  outboxDir = mkdtempSync(join(tmpdir(), "outbox-process-"));
  nc = await connect({ servers: `nats://127.0.0.1:${NATS_PORT}` });
});

afterAll(async () => {
  await nc?.close();
  await natsLink?.close();
  await cleanRedis(`test:${id}:`);
  await deleteStreams(id);
  await database?.drop();
  rmSync(outboxDir, { recursive: true, force: true });
});

/** quota-meter as its own process, with OUTBOX_DIR on the directory every run shares. */
async function start(natsUrl: string): Promise<{ service: RunningService; addr: string }> {
  const port = await freePort();
  const addr = `127.0.0.1:${port}`;
  const service = await spawnService(
    "quota-meter",
    {
      ...MESH_CALLERS_ENV,
      LOG_LEVEL: "warn",
      BIND_HOST: "127.0.0.1",
      GRPC_PORT: String(port),
      METRICS_PORT: String(await freePort()),
      DATABASE_URL: database.url,
      API_KEY_PEPPER: "outbox-process-test-pepper",
      OPERATOR_TOKEN,
      REDIS_PREFIX: `test:${id}:`,
      REDIS_STANDIN: "true",
      EVENTS_NAMESPACE: id,
      NATS_URL: natsUrl,
      OUTBOX_DIR: outboxDir,
    },
    (_, line) => lines.push(line),
    () => checkHealth(addr),
  );
  return { service, addr };
}

const exited = (service: RunningService) =>
  new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    if (service.child.exitCode !== null || service.child.signalCode !== null)
      resolve({ code: service.child.exitCode, signal: service.child.signalCode });
    else service.child.once("exit", (code, signal) => resolve({ code, signal }));
  });

/** Reports `n` calls of one account as the gateway does; resolves once quota-meter accepted them. */
async function report(addr: string, account: { accountId: string; keyId: string }, n: number) {
  const meter = meterClient(addr);
  try {
    const records: UsageRecord[] = Array.from({ length: n }, () => ({
      requestId: randomUUID(),
      accountId: account.accountId,
      keyId: account.keyId,
      endpoint: "/api/chain/block-number",
      network: "ethereum",
      status: 200,
      latencyMs: 3,
      time: new Date().toISOString(),
      refund: false,
      dayWindow: "",
      monthWindow: "",
    }));
    expect((await meter.report(records)).accepted).toBe(n);
    return records.map((r) => r.requestId as string);
  } finally {
    meter.close();
  }
}

/** Request ids of the usage calls stored in the stream (duplicates kept, to count them). */
async function storedRequestIds(): Promise<string[]> {
  const stream = streamSpecFor(USAGE_V2, id).name;
  const info = await (await jetstreamManager(nc)).streams.info(stream).catch(() => undefined);
  if (!info || info.state.messages === 0) return [];
  const consumer = await jetstream(nc).consumers.get(stream);
  const fetched = await consumer.fetch({ max_messages: info.state.messages, expires: 2_000 });
  const ids: string[] = [];
  let read = 0;
  for await (const m of fetched) {
    if (m.subject === natsSubject(USAGE_V2, id))
      ids.push(...m.json<UsageBatchV2>().calls.map((c) => c.request_id));
    if (++read >= info.state.messages) break;
  }
  return ids;
}

describe("the event outbox of a service process, on a directory that outlives it", () => {
  it("keeps events across SIGKILL and SIGTERM during a NATS outage and delivers each once on the next start", async () => {
    await natsLink.cut();
    const first = await start(natsLink.url("nats"));
    const admin = adminClient(first.addr, OPERATOR_TOKEN);
    const account = await admin.accountWithKey();
    admin.close();
    const killed = await report(first.addr, account, 25);
    const firstExit = exited(first.service);
    first.service.child.kill("SIGKILL");
    expect((await firstExit).signal).toBe("SIGKILL");

    // NATS still away: the next process replays nothing yet, takes more, and drains on SIGTERM.
    const second = await start(natsLink.url("nats"));
    const drained = await report(second.addr, account, 15);
    const secondExit = exited(second.service);
    const signalled = Date.now();
    second.service.child.kill("SIGTERM");
    expect((await secondExit).code, lines.join("\n")).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(25_000);
    expect(await storedRequestIds()).toEqual([]);

    // NATS back, same directory: every event of both runs arrives, once.
    await natsLink.restore();
    const third = await start(`nats://127.0.0.1:${NATS_PORT}`);
    try {
      const expected = [...killed, ...drained].sort();
      const ids = await waitFor(async () => {
        const stored = await storedRequestIds();
        return stored.length >= expected.length ? stored : undefined;
      }, 20_000);
      expect(ids.sort()).toEqual(expected);
    } finally {
      await third.service.stop();
    }
  });
});
