// The cluster chaos run's faults (`pnpm chaos --cluster`, issue 43): against a mesh on a Redis Cluster
// (3 masters, 3 replicas) and a 3-node NATS JetStream cluster, a Redis master is killed with SIGKILL
// under load (the one holding the quota windows' slot), then, once it is back as a replica and in
// step, the master promoted in its place is killed too (the pair's second failover); then the NATS
// node leading the streams is killed and later restarted. After each, the books (clusterBooks): what
// asynchronous replication lost, by kind, and the money rules.
import type { DevnetFile } from "@tollgate/devnet";
import { type Mesh, meshAdmin } from "@tollgate/local";
import { createPublicClient, http, type PublicClient } from "viem";
import { creditBalance, ledgerBalance } from "../support/credits.ts";
import { eventually, sleep } from "../support/eventually.ts";
import type { TestDatabase } from "../support/postgres.ts";
import { x402Payer } from "../support/x402.ts";
import { type OwnNatsCluster, type OwnRedisCluster, waitCost } from "./cluster.ts";
import type { FaultTargets } from "./faults.ts";
import { type Account, now, PRICE, type Tally } from "./load.ts";
import { type ClusterBooks, type Reconciliation, round } from "./report.ts";

/** The hash tag of every quota window and hot-copy key (docs/architecture.md, Redis keys). */
const QUOTA_TAG = "{quota:hot-copy}";

interface ClusterFaultTargets extends Pick<FaultTargets, "phase" | "note" | "hold"> {
  redis: OwnRedisCluster;
  nats: OwnNatsCluster;
  log: (line: string) => void;
}

/** Runs the cluster faults in turn, after a baseline phase with none. */
export async function runClusterFaults(t: ClusterFaultTargets): Promise<void> {
  const { phase, note, hold, redis, nats, log } = t;
  const none = async () => {};
  // time-based: a baseline phase of load with no fault is a stretch of time by definition.
  await sleep(hold(10, 4));
  // What WAIT would cost each write that must survive a failover, measured under the run's load.
  await phase(
    "baseline (no fault)",
    async () => {
      const cost = await waitCost(redis, `chaos:wait-cost:${QUOTA_TAG}`);
      log(`WAIT 1 1000 after a one-key script: ${JSON.stringify(cost)} ms per call (median)`);
      note(`WAIT cost: script ${cost.writeMs} ms, script + WAIT 1 ${cost.writeAndWaitMs} ms (median of 300)`);
    },
    none,
    0,
  );

  let killed = 0;
  let promoted = 0;
  const killMaster = (label: string, port: () => Promise<number>) =>
    phase(
      label,
      async () => {
        await redis.inStep();
        killed = await port();
        const t0 = now();
        promoted = await redis.killMaster(killed);
        note(
          `killed :${killed}, :${promoted} promoted; cluster ok ${round((now() - t0) / 1000)} s after the kill`,
        );
      },
      none,
      0,
    );
  await killMaster("Redis master of the quota windows' slot killed (SIGKILL), replica promoted", () =>
    redis.masterOf(QUOTA_TAG),
  );
  // The dead master back, as the promoted one's replica (its nodes.conf names the pair), in step.
  await redis.node(killed).start();
  await redis.inStep();
  await killMaster("the promoted master killed in turn (the pair's second failover)", async () => promoted);
  await redis.node(killed).start();
  await redis.inStep();

  const leader = await nats.streamLeader();
  const node = nats.nodes[leader.index];
  if (!node) throw new Error("no NATS node leads a stream");
  await phase(
    `NATS node n${leader.index + 1} (leading the most streams) killed (SIGKILL), restarted`,
    async () => {
      note(`stream replicas: ${JSON.stringify(leader.streams)}`);
      await node.stop("SIGKILL");
    },
    async () => {
      await node.start();
      await nats.healthy();
    },
    hold(20, 8),
  );
}

/**
 * The cluster books after a phase (load paused, `check` reconciled): lost writes by kind and the
 * money rules. The credits-only account's ledger balance is polled until it has folded every draw
 * the load saw (or 30 s).
 */
export async function clusterBooks(
  mesh: Mesh,
  database: TestDatabase,
  credits: Account & { bought: number },
  tally: Tally,
  check: Reconciliation,
  /** A transaction's receipt status on whichever local chain has it (undefined: none has). */
  receipt: (tx: `0x${string}`) => Promise<"success" | "reverted" | undefined>,
): Promise<ClusterBooks> {
  const price = Number(PRICE);
  const drawnForServed = tally.creditsDrawn * price;
  // The ledger catches up with the draws (usage folded from NATS); what it holds after 30 s is booked.
  const ledger = await eventually(
    () => ledgerBalance(database.url, credits.id),
    credits.bought - drawnForServed,
    30_000,
  );
  // The balance as quota-meter serves it (the hot copy in Redis, with what leases still hold).
  const hot = await creditBalance(
    { stateDir: mesh.stateDir, quotaMeterAddr: `127.0.0.1:${mesh.ports["quota-meter"].main}` },
    credits.id,
  );
  const rows = await database.query<{ outcome: string; n: string }>(
    "SELECT outcome, count(*) AS n FROM settlements GROUP BY outcome",
  );
  const outcomes = Object.fromEntries(rows.map((r) => [r.outcome, Number(r.n)]));
  // A failed settlement that broadcast a transaction: reverted on chain (gas spent, nothing moved)?
  const failed = await database.query<{ transaction: string | null; reason: string | null }>(
    `SELECT "transaction", reason FROM settlements WHERE outcome = 'failed'`,
  );
  let reverted = 0;
  const failedReasons: Record<string, number> = {};
  for (const f of failed) {
    const why = (f.reason ?? "").slice(0, 80);
    failedReasons[why] = (failedReasons[why] ?? 0) + 1;
    if (f.transaction && (await receipt(f.transaction as `0x${string}`)) === "reverted") reverted++;
  }
  const over = (a: string, b: string) => (BigInt(a) > BigInt(b) ? BigInt(a) - BigInt(b) : 0n);
  const under = (a: string, b: string) => Number(over(b, a)) / price;
  const authGaveUp = check.authGaveUp;
  const chargedUnserved =
    over(check.charged.onChain, check.charged.forServed) +
    over(check.mppCharged.onChain, check.mppCharged.forServed) +
    over(check.batchCharged.channel, check.batchCharged.forServed) +
    over(check.session.accepted, check.session.forServed) +
    over(check.session.settled, check.session.accepted) +
    over(String(credits.bought - ledger), String(drawnForServed));
  return {
    lost: {
      quotaUnits: check.windows.reduce((n, w) => n + Math.max(0, w.tally - w.window), 0),
      quotaOvercounted: Math.max(
        0,
        check.windows.reduce((n, w) => n + Math.max(0, w.window - w.tally), 0) - authGaveUp,
      ),
      batchVouchers: under(check.batchCharged.channel, check.batchCharged.forServed),
      sessionVouchers: under(check.session.accepted, check.session.forServed),
      creditDebits: Math.max(0, hot - ledger) / price,
      events: check.lost,
    },
    money: {
      settledTwice: check.ledgerSettled.duplicateTransactions + check.servedTwice,
      chargedUnserved: String(chargedUnserved),
      revertedSettlements: reverted,
      creditsBelowZero: (ledger < 0 ? 1 : 0) + (hot < 0 ? 1 : 0),
    },
    credits: { bought: credits.bought, drawnForServed, ledger, hot, failOpen: tally.creditsFailOpen },
    outcomes,
    failedReasons,
  };
}

/**
 * The cluster run's credits-only account (every call draws its price), its 20 USDC of credits bought
 * with the official x402 client as a user does (POST /api/credits, the key beside the payment); and
 * a reader of a transaction's receipt status on the settlement chain or on Tempo (`chains`).
 */
export async function creditsAccount(mesh: Mesh, devnet: DevnetFile, chains: [PublicClient, string]) {
  const admin = meshAdmin(mesh);
  const { account, secret } = await admin.quickstart("chaos-credits", {
    daily: 0,
    monthly: 0,
    burst: 100_000,
    creditsOnly: true,
  });
  admin.close();
  const res = await x402Payer(devnet, "payer6").fetch(`${mesh.gatewayUrl}/api/credits?amount=20`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}` },
  });
  if (res.status !== 200) throw new Error(`buying credits: ${res.status} ${await res.text()}`);
  const clients = [chains[0], createPublicClient({ transport: http(chains[1], { retryCount: 0 }) })];
  return {
    credits: { id: account.id, key: secret, bought: 20_000_000 },
    receipt: async (hash: `0x${string}`) => {
      for (const client of clients) {
        const r = await client.getTransactionReceipt({ hash }).catch(() => undefined);
        if (r) return r.status;
      }
      return undefined;
    },
  };
}
