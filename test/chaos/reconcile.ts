// The chaos run's books: after each phase, with the load paused, the windows, the usage rollups,
// the payment ledger and the chain are read and checked against the load's tally.
import type { DevnetFile } from "@tollgate/devnet";
import type { Mesh } from "@tollgate/local";
import { eventually, sleep } from "../support/eventually.ts";
import type { TestDatabase } from "../support/postgres.ts";
import { type Address, type settlementClient, usdcBalance, type x402Payer } from "../support/x402.ts";
import { type Account, now, PRICE, type Tally } from "./load.ts";
import { type Reconciliation, round } from "./report.ts";

/**
 * After recovery: the windows (a metered call per account), the usage rollups and the ledger
 * (PostgreSQL, polled until they stop moving) and the chain, each against the tally.
 */
export async function reconcile(
  mesh: Mesh,
  database: TestDatabase,
  accounts: Account[],
  payers: ReturnType<typeof x402Payer>[],
  tally: Tally,
  chain: ReturnType<typeof settlementClient>,
  devnet: DevnetFile,
  paidBefore: Map<string, bigint>,
  /** What the MPP payee received since the start: charges (pathUSD) and session settles (USDC.e). */
  mppPayee: () => Promise<{ charged: bigint; settled: bigint }>,
  log: (line: string) => void,
): Promise<Reconciliation> {
  // The load is paused: the tally is final; wait until PostgreSQL has folded every event.
  const snapshot = {
    counted: sum(tally.counted),
    reported: sum(tally.reported),
    x402: sum(tally.x402Served),
  };
  const t0 = now();
  const addresses = payers.map((p) => p.address.toLowerCase());
  const ids = accounts.map((a) => a.id);
  const read = async () => {
    const [u] = await database.query<{ requests: string | null; counted: string | null }>(
      "SELECT sum(requests) AS requests, sum(counted) AS counted FROM usage_daily WHERE account_id = ANY($1)",
      [ids],
    );
    const [l] = await database.query<{ settled: string; transactions: string }>(
      `SELECT count(*) AS settled, count(DISTINCT "transaction") AS transactions FROM settlements
       WHERE outcome = 'settled' AND scheme = 'exact' AND lower(payer) = ANY($1)`,
      [addresses],
    );
    return {
      usage: { requests: Number(u?.requests ?? 0), counted: Number(u?.counted ?? 0) },
      ledger: { settled: Number(l?.settled ?? 0), transactions: Number(l?.transactions ?? 0) },
    };
  };
  // Caught up, or what it reached in 30 s (the report says which).
  const { usage, ledger } = await eventually(
    read,
    (r) =>
      r.usage.counted === snapshot.counted &&
      r.usage.requests === snapshot.reported &&
      r.ledger.settled === snapshot.x402,
    30_000,
    250,
  );
  const convergeS = round((now() - t0) / 1000);

  // Windows: once every lease has ended and given back its unused units (1 s TTL, 250 ms sweep),
  // one more metered call per account, recorded in the tally like any other.
  // time-based: outwaits the lease TTL and its sweep; a read of the window before it would be one
  // more metered call (counted, starting a lease of its own), so there is no condition to poll.
  await sleep(1_500);
  const windows: Reconciliation["windows"] = [];
  for (const a of accounts) {
    let window = -1;
    for (let i = 0; i < 20 && window < 0; i++) {
      const res = await fetch(`${mesh.gatewayUrl}/api/chain/chain-id`, {
        headers: { authorization: `Bearer ${a.key}` },
      });
      await res.arrayBuffer();
      tally.record("key", res.status);
      if (res.status !== 200) continue;
      tally.reported.set(a.id, (tally.reported.get(a.id) ?? 0) + 1);
      const used = res.headers.get("x-quota-day-used");
      if (used === null) {
        tally.phase.key.failOpen++;
        // time-based: paces the retries of a call served fail-open (quota-meter's store away): each
        // retry is itself a metered call, recorded in the tally.
        await sleep(200);
        continue;
      }
      tally.counted.set(a.id, (tally.counted.get(a.id) ?? 0) + 1);
      window = Number(used);
    }
    windows.push({ account: a.id, window, tally: tally.counted.get(a.id) ?? 0 });
  }

  // The chain: what the exact payers paid vs what was served to them.
  let onChain = 0n;
  for (const p of payers)
    onChain += (paidBefore.get(p.address) ?? 0n) - (await usdcBalance(chain, devnet, p.address as Address));
  const served = BigInt(sum(tally.x402Served));
  const payee = await mppPayee();
  const usageCounted = { pg: usage.counted, tally: snapshot.counted };
  const usageRequests = { pg: usage.requests, tally: snapshot.reported };
  const ledgerSettled = {
    pg: ledger.settled,
    tally: snapshot.x402,
    duplicateTransactions: ledger.settled - ledger.transactions,
  };
  const lost =
    Math.max(0, usageCounted.tally - usageCounted.pg) +
    Math.max(0, usageRequests.tally - usageRequests.pg) +
    Math.max(0, ledgerSettled.tally - ledgerSettled.pg);
  const duplicated =
    Math.max(0, usageCounted.pg - usageCounted.tally) +
    Math.max(0, usageRequests.pg - usageRequests.tally) +
    Math.max(0, ledgerSettled.pg - ledgerSettled.tally) +
    ledgerSettled.duplicateTransactions;
  if (lost || duplicated) log(`reconcile: ${JSON.stringify({ usageCounted, usageRequests, ledgerSettled })}`);
  return {
    windowsExact: windows.every((w) => w.window === w.tally),
    authGaveUp: tally.authGaveUp,
    windows,
    usageCounted,
    usageRequests,
    ledgerSettled,
    charged: { onChain: String(onChain), forServed: String(PRICE * served) },
    batchCharged: {
      channel: String(tally.batchCumulative),
      forServed: String(PRICE * BigInt(tally.batchServed)),
    },
    mppCharged: { onChain: String(payee.charged), forServed: String(PRICE * BigInt(tally.mppServed)) },
    session: {
      accepted: String(tally.sessionSpent),
      forServed: String(PRICE * BigInt(tally.sessionServed)),
      settled: String(payee.settled),
    },
    servedTwice: tally.servedTwice,
    convergeS,
    lost,
    duplicated,
  };
}

const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
