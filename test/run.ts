// `pnpm test`'s vitest step: the component project (two workers) and the mesh project in two
// shards (each one file at a time, on a devnet and a shared mesh of its own, so neither blurs the
// other's counters or spends from the other's accounts), as three vitest processes side by side.
// Vitest alone would run a one-file-at-a-time project after every parallel one, leaving a core idle.
// Each line is prefixed with its lane; the exit code is the worst. Arguments go to every lane
// (e.g. a test name filter: `pnpm exec node test/run.ts -t 'refund'`).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

interface Lane {
  project: string;
  shard?: string;
}

const LANES: readonly Lane[] = [
  { project: "mesh", shard: "1/2" },
  { project: "mesh", shard: "2/2" },
  { project: "components" },
];
const extra = process.argv.slice(2).filter((a) => a !== "--");
const started = Date.now();
const nameOf = (lane: Lane) => (lane.shard ? `${lane.project} ${lane.shard}` : lane.project);

function run(lane: Lane): Promise<number> {
  const args = ["node_modules/vitest/vitest.mjs", "run", "--project", lane.project];
  if (lane.shard) args.push(`--shard=${lane.shard}`);
  const child = spawn(process.execPath, [...args, ...extra], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, FORCE_COLOR: process.env.FORCE_COLOR ?? (process.stdout.isTTY ? "1" : "0") },
  });
  const tag = `[${nameOf(lane)}]`.padEnd(14);
  for (const [from, to] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ] as const) {
    createInterface({ input: from }).on("line", (line) => to.write(`${tag}${line}\n`));
  }
  return new Promise((resolve) => child.on("close", (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

const codes = await Promise.all(LANES.map(run));
const minutes = ((Date.now() - started) / 60_000).toFixed(1);
for (const [i, lane] of LANES.entries())
  process.stdout.write(`${nameOf(lane)}: ${codes[i] === 0 ? "passed" : `FAILED (exit ${codes[i]})`}\n`);
process.stdout.write(`vitest wall time ${minutes} min\n`);
process.exit(Math.max(...codes));
