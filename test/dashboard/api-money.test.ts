// The account API's money: GET credits (quota-meter's credit ledger) and GET payments (the payment
// ledger of a real settlement-worker, fed through NATS as payment-verifier feeds it), each scoped to
// the signed-in wallet. Real quota-meter, settlement-worker, Redis, NATS and PostgreSQL.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createEventPublisher,
  type EventPublisher,
  SETTLEMENT_V2,
  type SettlementEventV2,
} from "@tollgate/events";
import { CallError, contracts, createClient, grpc, meshTokenDigest } from "@tollgate/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../services/settlement-worker/src/config.ts";
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
import { GATEWAY_TOKEN, MESH_CALLERS, withEnv } from "../support/mesh.ts";
import { createTestDatabase, type TestDatabase } from "../support/postgres.ts";
import { DASHBOARD_TOKEN, startTestDashboard, type TestDashboard, Wallet } from "./support.ts";

const namespace = uniqueId("dashmoney");
let database: TestDatabase;
let worker: SettlementWorkerHandle;
let publisher: EventPublisher;
let outbox: string;
let dash: TestDashboard;

/** A payment chain no explorer has: the devnet's, named in LOCAL_CHAINS. */
const LOCAL = "eip155:4217";
const ASSET = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";

beforeAll(async () => {
  database = await createTestDatabase("dashmoney");
  outbox = mkdtempSync(join(tmpdir(), "dashmoney-outbox-"));
  const config = withEnv({ DATABASE_URL: database.url }, loadConfig);
  worker = await startSettlementWorker(
    {
      ...config,
      host: "127.0.0.1",
      grpcPort: 0,
      metricsPort: 0,
      natsUrl: `nats://127.0.0.1:${NATS_PORT}`,
      eventsNamespace: namespace,
      operatorToken: OPERATOR_TOKEN,
      meshCallers: { ...MESH_CALLERS, dashboard: [meshTokenDigest(DASHBOARD_TOKEN)] },
      chain: undefined,
      released: { perHour: 20, retentionDays: 30 },
    },
    { logger: silentLogger() },
  );
  publisher = createEventPublisher({
    natsUrl: `nats://127.0.0.1:${NATS_PORT}`,
    service: "dashmoney-test",
    outboxDir: outbox,
    logger: silentLogger(),
    namespace,
  });
  dash = await startTestDashboard({
    settlementWorkerAddr: `127.0.0.1:${worker.grpcPort}`,
    localChains: [LOCAL],
    gatewayUrl: "http://127.0.0.1:1",
  });
});

afterAll(async () => {
  await dash?.stop();
  await publisher?.close();
  await worker?.stop();
  await deleteStreams(namespace);
  await database?.drop();
  if (outbox) rmSync(outbox, { recursive: true, force: true });
});

let seq = 0;
function payment(payer: string, more: Partial<SettlementEventV2> = {}): SettlementEventV2 {
  seq += 1;
  const id = `dm${namespace}${seq}`;
  return {
    id: `${id}:settled`,
    request_id: `req-${id}`,
    endpoint: "/api/chain/block-number",
    network: "ethereum",
    scheme: "exact",
    payer,
    amount: "1000",
    asset: ASSET,
    payment_network: "eip155:84532",
    outcome: "settled",
    transaction: `0x${seq.toString(16).padStart(64, "a")}`,
    channel: null,
    cumulative: null,
    reason: null,
    time: new Date(Date.UTC(2026, 10, 20, 10, 0, seq)).toISOString(),
    ...more,
  };
}

async function publish(events: SettlementEventV2[]) {
  for (const e of events) await publisher.publish(SETTLEMENT_V2, e);
}

async function signedIn() {
  const w = new Wallet(dash.url);
  const res = await w.signIn();
  expect(res.status).toBe(200);
  return w;
}

describe("GET /api/dashboard/payments", () => {
  it("lists the signed-in wallet's per-call payments, newest first, with chains named and linked; never another wallet's", async () => {
    const alice = await signedIn();
    const bob = await signedIn();
    // Alice pays in every letter case the ledger may hold; Bob's and the non-payments are not hers.
    const mine = [
      payment(alice.account.address.toLowerCase()),
      payment(alice.account.address, { scheme: "charge", payment_network: LOCAL, amount: "2500" }),
      payment(alice.account.address, {
        id: `acc${namespace}:accrued`,
        outcome: "accrued",
        scheme: "x402-batch",
        transaction: null,
        channel: "0xchannel",
        cumulative: "3000",
      }),
      payment(alice.account.address, { payment_network: "eip155:999999" }),
    ];
    const others = [
      payment(bob.account.address),
      payment(alice.account.address, { id: `f${namespace}:failed`, outcome: "failed", reason: "no funds" }),
      payment(alice.account.address, {
        id: `r${namespace}:released`,
        outcome: "released",
        transaction: null,
      }),
    ];
    await publish([...mine, ...others]);
    const listed = await waitFor(
      async () => {
        const res = await alice.call("GET", "/payments");
        return res.status === 200 && res.body.data.payments.length === mine.length && res.body.data;
      },
      15_000,
      100,
    );
    expect(listed.next_cursor).toBeNull();
    // Newest first: the events' times increase with their order above.
    expect(listed.payments.map((p: { id: string }) => p.id)).toEqual(mine.map((e) => e.id).reverse());
    const [unknown, accrued, charge, exact] = listed.payments;
    expect(exact).toMatchObject({
      outcome: "settled",
      protocol: "x402",
      scheme: "exact",
      endpoint: "/api/chain/block-number",
      network: "ethereum",
      amount: "0.001",
      amount_atomic: "1000",
      asset: ASSET,
      chain: { id: "eip155:84532", name: "Base Sepolia" },
      transaction: mine[0]?.transaction,
      transaction_url: `https://sepolia.basescan.org/tx/${mine[0]?.transaction}`,
      channel: null,
    });
    // A chain in LOCAL_CHAINS: its name, marked local, no link.
    expect(charge).toMatchObject({
      protocol: "MPP",
      scheme: "charge",
      amount: "0.0025",
      chain: { id: LOCAL, name: "Tempo Mainnet (local)" },
      transaction: mine[1]?.transaction,
      transaction_url: null,
    });
    expect(accrued).toMatchObject({
      outcome: "accrued",
      protocol: "x402",
      transaction: null,
      transaction_url: null,
      channel: "0xchannel",
    });
    // A chain viem's list does not hold: its CAIP-2 id, no link.
    expect(unknown).toMatchObject({
      chain: { id: "eip155:999999", name: "eip155:999999" },
      transaction_url: null,
    });

    const bobs = await bob.call("GET", "/payments");
    expect(bobs.status).toBe(200);
    expect(bobs.body.data.payments.map((p: { id: string }) => p.id)).toEqual([others[0]?.id]);
    // A wallet that never paid sees nothing; a query cannot name another payer.
    const carol = await signedIn();
    const none = await carol.call("GET", `/payments?payer=${alice.account.address}`);
    expect(none.status).toBe(200);
    expect(none.body.data).toEqual({ payments: [], next_cursor: null });
  });

  it("pages with limit and cursor, each page the wallet's own", async () => {
    const dave = await signedIn();
    const mine = Array.from({ length: 5 }, () => payment(dave.account.address));
    await publish([...mine, payment(`0x${"e".repeat(40)}`)]);
    await waitFor(
      async () => (await dave.call("GET", "/payments?limit=200")).body.data?.payments.length === 5,
      15_000,
      100,
    );
    const seen: string[] = [];
    let cursor = "";
    let pages = 0;
    do {
      const res = await dave.call("GET", `/payments?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      expect(res.body.data.payments.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.payments.map((p: { id: string }) => p.id));
      cursor = res.body.data.next_cursor ?? "";
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(mine.map((e) => e.id).reverse());
  });

  it("refuses a bad limit or cursor with 400 naming it, and answers 401 without a session", async () => {
    const w = await signedIn();
    for (const [query, parameter] of [
      ["limit=0", "limit"],
      ["limit=201", "limit"],
      ["limit=ten", "limit"],
      ["cursor=not%20a%20cursor", "cursor"],
    ] as const) {
      const res = await w.call("GET", `/payments?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error).toMatchObject({ code: "invalid_parameter", parameter });
    }
    // Well-formed, but not one the ledger wrote.
    const forged = await w.call("GET", "/payments?cursor=bm90LWEtY3Vyc29y");
    expect(forged.status).toBe(400);
    expect(forged.body.error.code).toBe("invalid_parameter");
    const anonymous = new Wallet(dash.url);
    const res = await anonymous.call("GET", "/payments");
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe("not_signed_in");
  });

  it("settlement-worker lets the dashboard's token list payments and nothing else, and no other caller list them", async () => {
    const admin = contracts.settlementWorker();
    const address = `127.0.0.1:${worker.grpcPort}`;
    const asDashboard = createClient(admin.SettlementAdminService, address, {
      service: "settlement-worker",
      defaultDeadlineMs: 5_000,
      token: DASHBOARD_TOKEN,
    });
    const asGateway = createClient(admin.SettlementAccountService, address, {
      service: "settlement-worker",
      defaultDeadlineMs: 5_000,
      token: GATEWAY_TOKEN,
    });
    const failure = async (p: Promise<unknown>) => {
      const err = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(CallError);
      return (err as CallError).failure;
    };
    try {
      // The operator's listing wants the operator token, whoever calls.
      const listing = await failure(asDashboard.call("ListSettlements", { payer: `0x${"1".repeat(40)}` }));
      expect(listing.grpcCode).toBe(grpc.status.UNAUTHENTICATED);
      const gateway = await failure(asGateway.call("ListOwnPayments", { payer: `0x${"1".repeat(40)}` }));
      expect(gateway.grpcCode).toBe(grpc.status.PERMISSION_DENIED);
    } finally {
      asDashboard.close();
      asGateway.close();
    }
  });
});

describe("GET /api/dashboard/credits", () => {
  it("shows the balance and the day's top-ups of the signed-in account only, and where to top up", async () => {
    const erin = await signedIn();
    const frank = await signedIn();
    const empty = await erin.call("GET", "/credits");
    expect(empty.status).toBe(200);
    expect(empty.body.data).toMatchObject({
      balance_usdc: "0",
      credits_only: false,
      top_up: { path: "/api/credits", gateway_url: "http://127.0.0.1:1", amounts_usdc: ["1", "5", "20"] },
    });
    expect(empty.body.data.days).toHaveLength(30);
    // Credited as the gateway credits a settled top-up (CreditService, the gateway's token).
    const credit = createClient(
      contracts.quotaMeter().CreditService,
      `127.0.0.1:${dash.meter.handle.grpcPort}`,
      {
        service: "quota-meter",
        defaultDeadlineMs: 5_000,
        token: GATEWAY_TOKEN,
      },
    );
    try {
      for (const [cause, amount] of [
        [`settle-${namespace}-1`, 5_000_000],
        [`settle-${namespace}-2`, 1_500_000],
      ] as const) {
        await credit.call("CreditTopUp", {
          wallet: erin.account.address,
          amount,
          cause,
          scheme: "exact",
          paymentNetwork: "eip155:84532",
          transaction: `0x${"b".repeat(64)}`,
        });
      }
    } finally {
      credit.close();
    }
    const after = await erin.call("GET", "/credits");
    expect(after.status).toBe(200);
    expect(after.body.data.balance_usdc).toBe("6.5");
    const today = new Date().toISOString().slice(0, 10);
    expect(after.body.data.days.at(-1)).toEqual({
      day: today,
      top_ups_usdc: "6.5",
      draws_usdc: "0",
      refunds_usdc: "0",
    });
    // Frank's account saw none of it.
    const franks = await frank.call("GET", "/credits");
    expect(franks.body.data.balance_usdc).toBe("0");
    expect(franks.body.data.days.at(-1)).toMatchObject({ top_ups_usdc: "0" });
    const anonymous = await new Wallet(dash.url).call("GET", "/credits");
    expect(anonymous.status).toBe(401);
  });
});
