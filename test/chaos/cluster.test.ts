// The cluster chaos run's CI form (`pnpm chaos --cluster --short`, issue 43): a mesh on a Redis Cluster
// (3 masters, 3 replicas) and a 3-node NATS JetStream cluster under the mixed load (API keys, a
// credits-only account, x402 exact and batch, MPP charge and session), a Redis master killed with
// SIGKILL, then the master promoted in its place, then the NATS node leading the streams. The money
// rules hold through every failover, the NATS node loss loses no event, and every service is back to
// full service after each (a quota-meter once failed open for minutes: the cluster client never
// asked for the slots again).
import { describe, expect, it } from "vitest";
import { runChaos } from "./chaos.ts";
import { table } from "./report.ts";

describe("chaos run on a Redis Cluster and a NATS cluster, short form", () => {
  it("keeps the money rules through two master failovers and a NATS node loss", async () => {
    const report = await runChaos({ short: true, cluster: true, log: () => {} });
    process.stderr.write(`${table(report)}\n`);
    for (const p of report.phases)
      process.stderr.write(`${p.fault}: ${JSON.stringify(p.cluster)} ${p.notes}\n`);
    expect(report.phases.map((p) => p.fault)).toEqual([
      "baseline (no fault)",
      "Redis master of the quota windows' slot killed (SIGKILL), replica promoted",
      "the promoted master killed in turn (the pair's second failover)",
      expect.stringMatching(/^NATS node n\d \(leading the most streams\) killed \(SIGKILL\), restarted$/),
    ]);
    for (const p of report.phases) {
      const why = `${p.fault}: ${JSON.stringify(p)}`;
      const books = p.cluster;
      expect(books, why).toBeDefined();
      // The four zeros.
      expect(books?.money, why).toEqual({
        settledTwice: 0,
        chargedUnserved: "0",
        revertedSettlements: 0,
        creditsBelowZero: 0,
      });
      expect(p.bad5xx, why).toBe(0);
      expect(p.check.duplicated, why).toBe(0);
      // No usage or settlement event lost, the NATS node's loss included: the rollups and the
      // ledger equal the load's own count.
      expect(p.check.lost, why).toBe(0);
      // What async replication may lose, bounded as docs/resilience.md states: the writes of the
      // last moment before a kill (nothing is waited for on a replica), a few calls' worth.
      expect(books?.lost.quotaUnits, why).toBeLessThanOrEqual(10);
      expect(books?.lost.quotaOvercounted, why).toBeLessThanOrEqual(10);
      expect(books?.lost.creditDebits, why).toBeLessThanOrEqual(10);
      expect(books?.lost.batchVouchers, why).toBeLessThanOrEqual(10);
      expect(books?.lost.sessionVouchers, why).toBeLessThanOrEqual(10);
      // Full service again: every class answered after the failover within 15 s (a loaded machine).
      for (const [cls, s] of Object.entries(p.recoverS))
        expect(s, `${why}: ${cls} recovery`).toBeLessThanOrEqual(15);
    }
    // The streams were made with 3 replicas.
    const nats = report.phases.at(-1)?.notes.join("") ?? "";
    expect(nats).toMatch(/"TOLLGATE_USAGE":3/);
    expect(nats).toMatch(/"TOLLGATE_SETTLEMENT":3/);
  }, 600_000);
});
