// `pnpm chaos [--short] [--cluster] [--soak 10m [--heap-snapshots dir] [--limits]] [--out file.json]`: the chaos run (see
// chaos.ts; --cluster: on a Redis Cluster and a NATS cluster, cluster-faults.ts), its table printed, its report written as JSON.
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { runChaos } from "./chaos.ts";
import { table } from "./report.ts";
import { soakTable } from "./soak.ts";

const { values } = parseArgs({
  options: {
    short: { type: "boolean", default: false },
    soak: { type: "string" },
    out: { type: "string", default: "chaos-report.json" },
    "heap-snapshots": { type: "string" },
    limits: { type: "boolean", default: false },
    cluster: { type: "boolean", default: false },
  },
});

/** "10m", "90s", "1h" → milliseconds. */
function duration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text);
  if (!m) throw new Error(`--soak takes a duration like 10m or 90s, got "${text}"`);
  return Number(m[1]) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as "ms" | "s" | "m" | "h"];
}

const report = await runChaos({
  short: values.short,
  ...(values.soak ? { soakMs: duration(values.soak) } : {}),
  ...(values["heap-snapshots"] ? { heapSnapshots: resolve(values["heap-snapshots"]) } : {}),
  limits: values.limits,
  cluster: values.cluster,
});
writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
process.stdout.write(`\n${table(report)}\n\n`);
process.stdout.write(`totals: ${JSON.stringify(report.totals)}\n`);
for (const p of report.phases)
  if (p.cluster) process.stdout.write(`${p.fault}: ${JSON.stringify({ ...p.cluster, notes: p.notes })}\n`);
if (report.soak) process.stdout.write(`\n${soakTable(report.soak)}\n`);
process.stdout.write(`report: ${values.out}\n`);
