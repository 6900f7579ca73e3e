// The settlement worker's ledger from the operator's side: real NATS (a namespace of this file's),
// a database of its own on the machine's PostgreSQL, the admin API with the operator token.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLedgerClient, type LedgerClient } from "@tollgate/cli/clients/settlement-admin";
import { openDatabase } from "@tollgate/db";
import {
  createEventPublisher,
  type EventPublisher,
  SETTLEMENT_V1,
  SETTLEMENT_V2,
  type SettlementEventV2,
} from "@tollgate/events";
import { CallError, createRegistry, grpc, type Registry } from "@tollgate/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createLedgerStore,
  type LedgerTables,
} from "../../services/settlement-worker/src/adapters/ledger-store.ts";
import { loadConfig } from "../../services/settlement-worker/src/config.ts";
import { entryOf } from "../../services/settlement-worker/src/core/ledger.ts";
import {
  type SettlementWorkerHandle,
  startSettlementWorker,
} from "../../services/settlement-worker/src/server.ts";
import {
  deleteStreams,
  NATS_PORT,
  OPERATOR_TOKEN,
  silentLogger,
  uniqueId,
  waitFor,
} from "../quota-meter/helpers.ts";
import { withEnv } from "../support/mesh.ts";
import { createTestDatabase, type TestDatabase } from "../support/postgres.ts";

const namespace = uniqueId("ledger");
let database: TestDatabase;
let worker: SettlementWorkerHandle;
let publisher: EventPublisher;
let ledger: LedgerClient;
let outbox: string;
let registry: Registry;
/** Released calls kept per payer per hour here: small, so a few events pass it. */
const PER_HOUR = 3;

const P = "0x00000000000000000000000000000000000000aA";
const Q = "0x00000000000000000000000000000000000000bB";
const ASSET = "0x0000000000000000000000000000000000000a55";

function event(
  id: string,
  outcome: SettlementEventV2["outcome"],
  payer: string,
  time: string,
  more: Partial<SettlementEventV2> = {},
): SettlementEventV2 {
  return {
    id,
    request_id: outcome === "claimed" ? null : `req-${id}`,
    endpoint: "/api/chain/block-number",
    network: "ethereum",
    scheme: "exact",
    payer,
    amount: "1000",
    asset: ASSET,
    payment_network: "eip155:84532",
    outcome,
    transaction: outcome === "settled" ? `0x${id.padStart(64, "0")}` : null,
    channel: null,
    cumulative: null,
    reason: null,
    time,
    ...more,
  };
}

beforeAll(async () => {
  database = await createTestDatabase("ledger");
  outbox = mkdtempSync(join(tmpdir(), "ledger-outbox-"));
  const config = withEnv({ DATABASE_URL: database.url }, loadConfig);
  registry = createRegistry("ledger-test");
  worker = await startSettlementWorker(
    {
      ...config,
      host: "127.0.0.1",
      grpcPort: 0,
      metricsPort: 0,
      natsUrl: `nats://127.0.0.1:${NATS_PORT}`,
      eventsNamespace: namespace,
      operatorToken: OPERATOR_TOKEN,
      chain: undefined,
      // The fixed days below stay within the retention; the bound is tried with events of now.
      released: { perHour: PER_HOUR, retentionDays: 36_500 },
    },
    { logger: silentLogger(), registry },
  );
  publisher = createEventPublisher({
    natsUrl: `nats://127.0.0.1:${NATS_PORT}`,
    service: "ledger-test",
    outboxDir: outbox,
    logger: silentLogger(),
    namespace,
  });
  ledger = createLedgerClient(`127.0.0.1:${worker.grpcPort}`, OPERATOR_TOKEN);
});

afterAll(async () => {
  ledger?.close();
  await publisher?.close();
  await worker?.stop();
  await deleteStreams(namespace);
  await database?.drop();
  rmSync(outbox, { recursive: true, force: true });
});

const refused = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CallError);
  return (err as CallError).failure;
};

describe("the payment ledger", () => {
  it("records every outcome of the stream once, and lists it by payer, day or channel", async () => {
    const events = [
      event("1", "settled", P, "2026-11-20T10:00:00.000Z"),
      event("2", "failed", P, "2026-11-20T11:00:00.000Z", { reason: "the transfer would fail on chain" }),
      event("3", "released", P, "2026-11-21T09:00:00.000Z"),
      event("4", "accrued", P, "2026-11-21T10:00:00.000Z", {
        scheme: "x402-batch",
        channel: "ch-1",
        cumulative: "3000",
        amount: "500",
      }),
      event("5", "claimed", P, "2026-11-21T12:00:00.000Z", {
        scheme: "x402-batch",
        channel: "ch-1",
        amount: "3000",
        transaction: `0x${"c".repeat(64)}`,
      }),
      event("6", "settled", Q, "2026-11-21T13:00:00.000Z"),
    ];
    publisher.publishMany(SETTLEMENT_V2, events);
    // A per-call v1 event from a journal written before the upgrade lands in the same ledger.
    publisher.publish(SETTLEMENT_V1, {
      ...event("7", "settled", Q, "2026-11-21T14:00:00.000Z"),
      request_id: "req-7",
      endpoint: "/api/chain/call",
      network: "ethereum",
    } as never);
    // Six money rows; the released call is a sample in its own table.
    await waitFor(async () => {
      const [counts] = await database.query<{ n: number; r: number }>(
        "select (select count(*) from settlements)::int as n, (select count(*) from released_calls)::int as r",
      );
      return counts?.n === 6 && counts.r === 1;
    }, 15_000);
    expect(await database.query("select id from released_calls")).toEqual([{ id: "3" }]);

    const byPayer = await ledger.list({ payer: P.toLowerCase() });
    expect(byPayer.settlements.map((s) => [s.id, s.outcome])).toEqual([
      ["5", "claimed"],
      ["4", "accrued"],
      ["3", "released"],
      ["2", "failed"],
      ["1", "settled"],
    ]);
    expect(byPayer.settlements.find((s) => s.id === "4")).toMatchObject({
      channel: "ch-1",
      cumulative: "3000",
      amount: "500",
    });
    expect(byPayer.totals).toEqual([
      { outcome: "accrued", asset: ASSET, count: 1, amount: "500" },
      { outcome: "claimed", asset: ASSET, count: 1, amount: "3000" },
      { outcome: "failed", asset: ASSET, count: 1, amount: "1000" },
      { outcome: "released", asset: ASSET, count: 1, amount: "1000" },
      { outcome: "settled", asset: ASSET, count: 1, amount: "1000" },
    ]);
    const day = await ledger.list({ day: "2026-11-21", outcome: "settled" });
    expect(day.settlements.map((s) => s.id)).toEqual(["7", "6"]);
    const channel = await ledger.list({ channel: "ch-1" });
    expect(channel.settlements.map((s) => s.id)).toEqual(["5", "4"]);

    // Pages: newest first, a cursor to the next, none after the last.
    const first = await ledger.list({ day: "2026-11-21", limit: 3 });
    expect(first.settlements.map((s) => s.id)).toEqual(["7", "6", "5"]);
    const second = await ledger.list({ day: "2026-11-21", limit: 3, cursor: first.nextCursor });
    expect(second.settlements.map((s) => s.id)).toEqual(["4", "3"]);
    expect(second.nextCursor).toBe("");
  });

  it("refuses bad filters by name, strangers, and a reconcile with no chain configured", async () => {
    expect(await refused(ledger.list({}))).toMatchObject({
      grpcCode: grpc.status.INVALID_ARGUMENT,
      message: expect.stringContaining("payer, day, channel"),
    });
    expect(await refused(ledger.list({ day: "2026-13-45" }))).toMatchObject({
      message: expect.stringContaining("day"),
    });
    expect(await refused(ledger.list({ payer: P, outcome: "stolen" }))).toMatchObject({
      message: expect.stringContaining("outcome"),
    });
    expect(await refused(ledger.list({ payer: P, cursor: "nope" }))).toMatchObject({
      message: expect.stringContaining("cursor"),
    });
    const stranger = createLedgerClient(`127.0.0.1:${worker.grpcPort}`, "not-the-operator");
    expect(await refused(stranger.list({ payer: P }))).toMatchObject({
      grpcCode: grpc.status.UNAUTHENTICATED,
    });
    stranger.close();
    expect(await refused(ledger.reconcile(1, 2))).toMatchObject({
      grpcCode: grpc.status.FAILED_PRECONDITION,
      message: expect.stringContaining("X402_SETTLEMENT_RPC_URL"),
    });
  });

  it("keeps released calls as samples: at most the bound per payer per hour, the rest only counted, pruned after the retention", async () => {
    const R = "0x00000000000000000000000000000000000000cC";
    const now = new Date().toISOString();
    // One payer reusing one authorization on a call refused after Verify: a release per attempt.
    const released = Array.from({ length: 12 }, (_, i) =>
      event(`rel-${i}`, "released", R, now, { reason: "call_failed" }),
    );
    publisher.publishMany(SETTLEMENT_V2, released);
    const overBound = async () =>
      (await registry.getSingleMetric("settlement_ledger_events_total")?.get())?.values.find(
        (v) => v.labels.outcome === "released" && v.labels.result === "over_bound",
      )?.value ?? 0;
    await waitFor(async () => (await overBound()) === released.length - PER_HOUR, 15_000);

    const rows = await database.query<{ n: number }>(
      "select (select count(*) from settlements where lower(payer) = $1)::int + (select count(*) from released_calls where lower(payer) = $1)::int as n",
      [R.toLowerCase()],
    );
    expect(rows[0]?.n).toBe(PER_HOUR);
    const listed = await ledger.list({ payer: R, outcome: "released" });
    expect(listed.settlements).toHaveLength(PER_HOUR);
    expect(listed.settlements.every((s) => s.outcome === "released" && s.reason === "call_failed")).toBe(
      true,
    );
    expect(listed.totals).toEqual([
      { outcome: "released", asset: ASSET, count: PER_HOUR, amount: String(PER_HOUR * 1000) },
    ]);

    // The store itself: a kept sample redelivered is a duplicate; past the retention nothing is
    // written, and pruning deletes what aged out (with a 30-day retention).
    const db = openDatabase<LedgerTables>({
      url: database.url,
      logger: silentLogger(),
      applicationName: "t",
    });
    try {
      const store = createLedgerStore(db.db, { perHour: PER_HOUR, retentionDays: 30 });
      const kept = listed.settlements[0]!;
      const again = entryOf(released.find((e) => e.id === kept.id)!);
      expect(await store.recordReleased(again, 1)).toBe("duplicate");
      const old = entryOf(
        event("rel-old", "released", R, new Date(Date.now() - 31 * 86_400_000).toISOString()),
      );
      expect(await store.recordReleased(old, 2)).toBe("expired");
      // Written while it was young (its own clock 29 days back), then pruned now.
      expect(await store.recordReleased(old, 2, Date.now() - 2 * 86_400_000)).toBe("recorded");
      expect(await store.pruneReleased()).toBe(1);
      const left = await database.query<{ id: string }>("select id from released_calls where id = 'rel-old'");
      expect(left).toEqual([]);
    } finally {
      await db.close();
    }
  });
});
