// `pnpm chaos [--short] [--soak 10m] [--out file.json]`: the chaos run (see chaos.ts), its table
// printed, its report written as JSON.
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { runChaos, table } from "./chaos.ts";

const { values } = parseArgs({
  options: {
    short: { type: "boolean", default: false },
    soak: { type: "string" },
    out: { type: "string", default: "chaos-report.json" },
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
});
writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
process.stdout.write(`\n${table(report)}\n\n`);
process.stdout.write(`totals: ${JSON.stringify(report.totals)}\n`);
if (report.soak) {
  process.stdout.write("\n| Process | RSS slope (KB/min) | Open fds slope (/min) |\n|---|---|---|\n");
  for (const s of report.soak.slopes)
    process.stdout.write(`| ${s.process} | ${s.rssKbPerMin} | ${s.fdsPerMin} |\n`);
  process.stdout.write(`outbox files left: ${report.soak.outboxFiles}\n`);
}
process.stdout.write(`report: ${values.out}\n`);
