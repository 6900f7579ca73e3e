// The CI form of the chaos run (`pnpm chaos --short`): a whole mesh on its own Redis, NATS and
// database, under mixed load, through every fault in turn. A regression in fail-open metering,
// failover, event durability, restarts or the charging rule fails here.
import { describe, expect, it } from "vitest";
import { type ChaosReport, runChaos, table } from "./chaos.ts";

describe("chaos run, short form", () => {
  let report: ChaosReport;

  it("holds the load through every fault: no 500, nothing lost or duplicated, nothing charged unserved", async () => {
    report = await runChaos({ short: true, log: () => {} });
    process.stderr.write(`${table(report)}\n`);
    expect(report.phases.map((p) => p.fault)).toHaveLength(8);
    for (const p of report.phases) {
      const why = `${p.fault}: ${JSON.stringify(p)}`;
      expect(p.bad5xx, why).toBe(0);
      expect(p.check.lost, why).toBe(0);
      expect(p.check.duplicated, why).toBe(0);
      expect(p.check.windowsExact, why).toBe(true);
      expect(p.check.servedTwice, why).toBe(0);
      expect(p.check.charged.onChain, why).toBe(p.check.charged.forServed);
      expect(p.check.batchCharged.channel, why).toBe(p.check.batchCharged.forServed);
      // Every class served calls again after the part came back, within bounds.
      for (const cls of ["key", "x402", "batch"] as const) {
        expect(p.served[cls], `${why}: ${cls} served`).toBeGreaterThan(0);
        expect(p.recoverS[cls], `${why}: ${cls} recovery`).toBeLessThanOrEqual(6);
      }
    }
    // The baseline is clean: every call served, every API-key call metered.
    const [baseline] = report.phases;
    expect(Object.keys(baseline?.answered.key ?? {})).toEqual(["200"]);
    expect(baseline?.failOpen).toBe(0);
  }, 300_000);
});
