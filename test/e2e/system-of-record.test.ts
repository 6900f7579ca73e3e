import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { natsSubject, SETTLEMENT_V2, streamSpecFor, USAGE_V2 } from "@tollgate/events";
import pg from "pg";
import { createWalletClient, erc20Abi, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ROLLUP_DURABLE } from "../../services/quota-meter/src/rollups.ts";
import { LEDGER_DURABLE } from "../../services/settlement-worker/src/adapters/events.ts";
import { RELEASED_DEFAULTS } from "../../services/settlement-worker/src/adapters/ledger-store.ts";
import { hourOf } from "../../services/settlement-worker/src/core/ledger.ts";
import { createAccountWithKey } from "../support/accounts.ts";
import { eventually } from "../support/eventually.ts";
import { runProcess } from "../support/run-process.ts";
import { type DevnetInfo, settlementClient, x402Payer } from "../support/x402.ts";

const mesh = inject("mesh");
const devnet = JSON.parse(readFileSync(mesh.devnetFile, "utf8")) as DevnetInfo & {
  accounts: { role: string; privateKey: `0x${string}` }[];
};
const REPO = fileURLToPath(new URL("../..", import.meta.url));
let db: pg.Pool;
let nc: NatsConnection;

beforeAll(async () => {
  db = new pg.Pool({ connectionString: mesh.databaseUrl, max: 2 });
  nc = await connect({ servers: "nats://127.0.0.1:4222" });
});

afterAll(async () => {
  await db?.end();
  await nc?.close();
});

/** `pnpm tollgate …` as the operator runs it. */
async function tollgate(args: string[]) {
  const { code, stdout, stderr } = await runProcess(
    process.execPath,
    [join(REPO, "tools/cli/src/main.ts"), ...args],
    {
      cwd: REPO,
      env: {
        ...process.env,
        OPERATOR_TOKEN: mesh.operatorToken,
        SETTLEMENT_WORKER_ADDR: mesh.settlementWorkerAddr,
        QUOTA_METER_ADDR: mesh.quotaMeterAddr,
      },
    },
  );
  return { code, json: (stdout ? JSON.parse(stdout) : {}) as Record<string, unknown>, stderr };
}

const rows = async <R>(text: string, values: unknown[] = []) => (await db.query(text, values)).rows as R[];

async function until<T>(fn: () => Promise<T | undefined | false>, ms = 20_000): Promise<T> {
  const v = await eventually(fn, (x) => !!x, ms, 100);
  if (!v) throw new Error(`not within ${ms} ms`);
  return v;
}

/** The durable has delivered and had acked everything its stream holds. */
async function caughtUp(subject: string, durable: string): Promise<boolean> {
  const jsm = await jetstreamManager(nc);
  const stream = streamSpecFor(subject, mesh.eventsNamespace).name;
  const info = await jsm.consumers.info(stream, durable).catch(() => undefined);
  return !!info && info.num_pending === 0 && info.num_ack_pending === 0 && info.num_redelivered >= 0;
}

interface Held {
  id: string;
  outcome?: string;
  payer?: string;
  time?: string;
}

/** Every message the stream holds for `subject` (its id, and a settlement's outcome, payer and time). */
async function streamEvents(subject: typeof USAGE_V2 | typeof SETTLEMENT_V2): Promise<Held[]> {
  const jsm = await jetstreamManager(nc);
  const stream = streamSpecFor(subject, mesh.eventsNamespace).name;
  const filter = natsSubject(subject, mesh.eventsNamespace);
  const held = (await jsm.streams.info(stream, { subjects_filter: filter })).state.subjects?.[filter] ?? 0;
  const ids: Held[] = [];
  if (held === 0) return ids;
  // One subject as a string: a list needs NATS 2.10, the machines run 2.9.
  const consumer = await jetstream(nc).consumers.get(stream, { filter_subjects: filter });
  for await (const m of await consumer.fetch({ max_messages: held, expires: 3_000 })) {
    const { id, outcome, payer, time } = m.json<Held>();
    ids.push({ id, outcome, payer, time });
    if (ids.length >= held) break;
  }
  return ids;
}

async function snapshot() {
  return {
    ledger: await rows("select id, outcome, amount::text, transaction from settlements order by id"),
    released: await rows("select id, payer, stream_seq from released_calls order by id"),
    windows: await rows("select payer, window_start, kept from released_windows order by 1, 2"),
    usage: await rows("select account_id, day, requests, errors, counted from usage_daily order by 1, 2"),
    batches: await rows<{ n: string }>("select count(*) as n from usage_batches"),
  };
}

describe("the system of record on the mesh", () => {
  it("records each paid call's settlement once; the operator lists it and reconciles the chain", async () => {
    const chain = settlementClient(devnet);
    // cacheTime 0: viem otherwise answers the block number it read up to 4 s ago.
    const from = (await chain.getBlockNumber({ cacheTime: 0 })) + 1n;
    const payer = x402Payer(devnet, "payer7");
    for (const path of ["/api/chain/block-number", "/api/chain/chain-id?network=sepolia"]) {
      const res = await payer.fetch(`${mesh.gatewayUrl}${path}`);
      expect(res.status).toBe(200);
    }
    const to = await chain.getBlockNumber({ cacheTime: 0 });

    const listed = await until(async () => {
      const out = await tollgate([
        "ledger",
        "list",
        "--payer",
        payer.address.toUpperCase().replace("0X", "0x"),
      ]);
      // The same address pays on the Tempo chain in the MPP suites: only this run's x402 settlements.
      const mine = (out.json.settlements as Array<Record<string, string>> | undefined)?.filter(
        (s) =>
          s.outcome === "settled" &&
          s.scheme === "exact" &&
          (s.time ?? "") >= new Date(Date.now() - 60_000).toISOString(),
      );
      return mine && mine.length >= 2 ? { out, mine } : undefined;
    });
    expect(listed.out.code).toBe(0);
    for (const s of listed.mine) {
      expect(s).toMatchObject({
        payer: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/),
        amount: "1000",
        asset: devnet.demo.settlement.usdc.address,
        payment_network: devnet.demo.settlement.network,
        scheme: "exact",
        transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      });
      expect(s.payer?.toLowerCase()).toBe(payer.address.toLowerCase());
      // Once: one row per transaction in the ledger.
      const same = await rows("select id from settlements where lower(transaction) = $1", [s.transaction]);
      expect(same).toHaveLength(1);
    }
    expect(listed.out.json.totals).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ outcome: "settled", asset: devnet.demo.settlement.usdc.address }),
      ]),
    );

    const clean = await tollgate([
      "ledger",
      "reconcile",
      "--from-block",
      String(from),
      "--to-block",
      String(to),
    ]);
    expect(clean.stderr).toBe("");
    expect(clean.json).toMatchObject({ reconciled: true, transfers: 2, ledger_entries: 2, differences: [] });
    expect(clean.json.transfer_total).toBe("2000");
    expect(clean.code).toBe(0);

    // Money that reached the receiver outside the mesh: reconciliation names the transaction.
    const sender = devnet.accounts.find((a) => a.role === "payer6")!;
    const wallet = createWalletClient({
      account: privateKeyToAccount(sender.privateKey),
      transport: http(devnet.chains.settlement!.rpcUrl),
    });
    const stray = await wallet.writeContract({
      chain: null,
      address: devnet.demo.settlement.usdc.address,
      abi: erc20Abi,
      functionName: "transfer",
      args: [devnet.demo.settlement.payTo, 7n],
    });
    const receipt = await chain.waitForTransactionReceipt({ hash: stray });
    const found = await tollgate([
      "ledger",
      "reconcile",
      "--from-block",
      String(from),
      "--to-block",
      String(receipt.blockNumber),
    ]);
    expect(found.code).toBe(1);
    expect(found.json).toMatchObject({ reconciled: false, transfers: 3, ledger_entries: 2 });
    expect(found.json.differences).toEqual([
      {
        kind: "missing_in_ledger",
        transaction: stray,
        block: Number(receipt.blockNumber),
        chain_amount: "7",
        ledger_amount: "0",
        ledger_ids: [],
        payer: sender.address.toLowerCase(),
      },
    ]);
  });

  it("holds every usage batch and settlement event of the run once, and a replay changes nothing", async () => {
    // Some API-key traffic of this file's own, so the usage stream has batches for certain.
    const { apiKey, accountId } = await createAccountWithKey();
    for (let i = 0; i < 3; i++) {
      await fetch(`${mesh.gatewayUrl}/api/chain/block-number`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
    }
    // The gateway reports in batches: wait for these three calls to be folded.
    const folded3 = async () =>
      (
        await rows<{ requests: string }>("select requests from usage_daily where account_id = $1", [
          accountId,
        ])
      )[0]?.requests === "3";
    await until(folded3);
    await until(
      async () =>
        (await caughtUp(USAGE_V2, ROLLUP_DURABLE)) && (await caughtUp(SETTLEMENT_V2, LEDGER_DURABLE)),
    );

    const settlementEvents = await streamEvents(SETTLEMENT_V2);
    const batchIds = (await streamEvents(USAGE_V2)).map((e) => e.id);
    const ledgerIds = (await rows<{ id: string }>("select id from settlements")).map((r) => r.id);
    const folded = (await rows<{ id: string }>("select id from usage_batches")).map((r) => r.id);
    expect(settlementEvents.length).toBeGreaterThan(0);
    const moneyIds = settlementEvents.filter((e) => e.outcome !== "released").map((e) => e.id);
    expect([...ledgerIds].sort()).toEqual([...new Set(moneyIds)].sort());
    // Released calls: the first ones of each payer's UTC hour, up to the bound, are kept as rows.
    const releasedByHour = new Map<string, Set<string>>();
    for (const e of settlementEvents.filter((e) => e.outcome === "released")) {
      const hour = `${e.payer?.toLowerCase()} ${e.time && hourOf(e.time).toISOString()}`;
      releasedByHour.set(hour, (releasedByHour.get(hour) ?? new Set()).add(e.id));
    }
    const kept = await rows<{ id: string; payer: string; occurred_at: Date }>(
      "select id, payer, occurred_at from released_calls",
    );
    for (const [hour, ids] of releasedByHour) {
      const mine = kept.filter(
        (r) => `${r.payer.toLowerCase()} ${hourOf(r.occurred_at.toISOString()).toISOString()}` === hour,
      );
      expect(mine.length, hour).toBe(Math.min(ids.size, RELEASED_DEFAULTS.perHour));
      expect(mine.every((r) => ids.has(r.id))).toBe(true);
    }
    expect([...folded].sort()).toEqual([...new Set(batchIds)].sort());
    const before = await snapshot();

    // Replay both streams from their start through the running services: their durable consumers
    // are deleted, the services recreate them (deliver all) and fold everything again.
    const jsm = await jetstreamManager(nc);
    await jsm.consumers.delete(streamSpecFor(USAGE_V2, mesh.eventsNamespace).name, ROLLUP_DURABLE);
    await jsm.consumers.delete(streamSpecFor(SETTLEMENT_V2, mesh.eventsNamespace).name, LEDGER_DURABLE);
    await until(
      async () =>
        (await caughtUp(USAGE_V2, ROLLUP_DURABLE)) && (await caughtUp(SETTLEMENT_V2, LEDGER_DURABLE)),
      30_000,
    );
    const redelivered = await jsm.consumers.info(
      streamSpecFor(USAGE_V2, mesh.eventsNamespace).name,
      ROLLUP_DURABLE,
    );
    expect(redelivered.delivered.stream_seq).toBeGreaterThanOrEqual(batchIds.length);
    expect(await snapshot()).toEqual(before);
  });
});
