// `pnpm check:timing` (part of `pnpm check`): no test waits for a time where it could wait for a
// condition (test/README.md, "Timing"). Every `setTimeout`, `setImmediate` or `sleep(` in test/ is
// either in the wait helper (WAIT_HELPERS: the one poll loop) or carries a comment starting
// `// time-based:` on the same line or in the comment right above it, saying why it cannot be a
// wait for a condition (it paces a client, holds a fault for a while, proves that something does
// not happen within a window, or bounds a Promise.race that fails the test).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";

const WAIT_HELPERS = new Set(["test/support/eventually.ts"]);
const TIMER = /\bsetTimeout\b|\bsetImmediate\b|\bsleep\(/;
const MARK = "// time-based:";

const files = execFileSync(
  "git",
  [
    "ls-files",
    "-z",
    "--cached",
    "--others",
    "--exclude-standard",
    "--",
    "test/*.ts",
    "test/*.js",
    "test/*.mjs",
  ],
  { encoding: "utf8" },
)
  .split("\0")
  .filter((f) => f && existsSync(f) && !WAIT_HELPERS.has(f));

const isComment = (line: string) => /^\s*(\/\/|\*|\/\*)/.test(line);

/** The line carries the mark, or the run of `//` comment lines right above it does. */
function annotated(lines: string[], i: number): boolean {
  if (lines[i]?.includes(MARK)) return true;
  for (let j = i - 1; j >= 0 && /^\s*\/\//.test(lines[j] ?? ""); j--) {
    if (lines[j]?.trim().startsWith(MARK)) return true;
  }
  return false;
}

const problems: string[] = [];
let marked = 0;
for (const file of files) {
  const lines = readFileSync(file, "utf8").split("\n");
  lines.forEach((line, i) => {
    if (!TIMER.test(line) || isComment(line)) return;
    if (annotated(lines, i)) marked++;
    else problems.push(`  ${file}:${i + 1}`);
  });
}

if (problems.length > 0) {
  process.stderr.write(
    `check:timing: a wait for time in test/ with no \`${MARK}\` comment saying why it cannot wait for a condition (use eventually() from test/support/eventually.ts):\n${problems.join("\n")}\n`,
  );
  process.exitCode = 1;
} else {
  process.stdout.write(
    `check:timing: ${files.length} test files; ${marked} time-based wait(s), each annotated\n`,
  );
}
