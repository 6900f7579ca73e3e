// Credits put into an account as the gateway's top-up route does after a settlement: through
// quota-meter's CreditService, presenting the gateway's mesh token from the mesh's state dir. A
// stand-in used by the benchmark's setup only: it grants one key 1,000 USDC, beyond any single
// top-up (1, 5 or 20 USDC), and the benchmark measures serving, not buying. Every test buys its
// credits through `POST /api/credits`, paid with the official clients; the balance readers below
// are the tests'.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { contracts, createClient } from "@tollgate/platform";
import pg from "pg";
import { createQuotaMeterClient } from "../../services/gateway/src/clients/quota-meter.ts";

interface MeshAt {
  stateDir: string;
  quotaMeterAddr: string;
}

const token = (stateDir: string, name: string) => readFileSync(join(stateDir, name), "utf8").trim();

/** Credits `amount` atomic units to the key's account. */
export async function creditAsGateway(mesh: MeshAt, target: { apiKey: string }, amount: number) {
  const client = createQuotaMeterClient(
    mesh.quotaMeterAddr,
    { token: token(mesh.stateDir, "mesh-token-gateway") },
    5_000,
  );
  try {
    return await client.topUp({
      apiKey: target.apiKey,
      wallet: "",
      amount,
      cause: `test-settlement:${randomUUID()}`,
      scheme: "exact",
      paymentNetwork: "eip155:84532",
      transaction: "",
    });
  } finally {
    client.close();
  }
}

/** An account's balance (atomic units) as the dashboard reads it. */
export async function creditBalance(mesh: MeshAt, accountId: string): Promise<number> {
  const client = createClient(contracts.quotaMeter().AccountService, mesh.quotaMeterAddr, {
    service: "quota-meter",
    token: token(mesh.stateDir, "mesh-token-dashboard"),
    defaultDeadlineMs: 5_000,
  });
  try {
    return Number((await client.call("GetOwnCredits", { accountId, days: 1 })).balance);
  } finally {
    client.close();
  }
}

/** An account's balance as the ledger in PostgreSQL holds it (top-ups − draws + refunds ± adjustments, atomic units). */
export async function ledgerBalance(databaseUrl: string, accountId: string): Promise<number> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const r = await db.query(
      "select coalesce(sum(case when kind in ('draw', 'deduct') then -amount else amount end), 0)::bigint as b from credit_ledger where account_id = $1",
      [accountId],
    );
    return Number(r.rows[0].b);
  } finally {
    await db.end();
  }
}

/**
 * An account's calls counted today in its plan's window, as the dashboard's usage page reads it
 * (quota-meter's window count; reading it counts nothing).
 */
export async function ownDayUsed(mesh: MeshAt, accountId: string): Promise<number> {
  const client = createClient(contracts.quotaMeter().AccountService, mesh.quotaMeterAddr, {
    service: "quota-meter",
    token: token(mesh.stateDir, "mesh-token-dashboard"),
    defaultDeadlineMs: 5_000,
  });
  try {
    const usage = await client.call("GetOwnUsage", { accountId, days: 1 });
    if (usage.quota?.dayUsed == null) throw new Error("no window count: is quota-meter's store away?");
    return Number(usage.quota.dayUsed);
  } finally {
    client.close();
  }
}
