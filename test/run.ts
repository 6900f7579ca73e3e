// `pnpm test`'s vitest step: the mesh project (one file at a time) and the component project (two
// workers) as two vitest processes side by side, each line prefixed with its project, the exit code
// the worse of the two. Arguments after `--` go to both (e.g. a test name filter with -t).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const PROJECTS = ["mesh", "components"] as const;
const extra = process.argv.slice(2).filter((a) => a !== "--");
const started = Date.now();

function run(project: string): Promise<number> {
  const child = spawn(process.execPath, ["node_modules/vitest/vitest.mjs", "run", "--project", project, ...extra], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, FORCE_COLOR: process.env.FORCE_COLOR ?? (process.stdout.isTTY ? "1" : "0") },
  });
  const tag = `[${project}]`.padEnd(13);
  for (const [from, to] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ] as const) {
    createInterface({ input: from }).on("line", (line) => to.write(`${tag}${line}\n`));
  }
  return new Promise((resolve) => child.on("close", (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

const codes = await Promise.all(PROJECTS.map(run));
const minutes = ((Date.now() - started) / 60_000).toFixed(1);
for (const [i, project] of PROJECTS.entries())
  process.stdout.write(`${project}: ${codes[i] === 0 ? "passed" : `FAILED (exit ${codes[i]})`}\n`);
process.stdout.write(`vitest wall time ${minutes} min\n`);
process.exit(Math.max(...codes));
