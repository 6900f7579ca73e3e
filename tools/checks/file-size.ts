// `pnpm check:size` (part of `pnpm check`): no hand-written source file (TypeScript, and the
// dashboard's browser JavaScript) reaches 500 lines, committed or not yet. A file
// that long has grown several responsibilities; split it by responsibility before it does. Generated
// code (any `generated/` folder) is exempt: nobody reads it to change it.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const LIMIT = 500;

const files = execFileSync(
  "git",
  ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.ts", "*.js", "*.mjs"],
  { encoding: "utf8" },
)
  .split("\0")
  .filter((f) => f && !/(^|\/)generated\//.test(f));

// Lines as `wc -l` counts them: newline characters.
const tooLong = files
  .map((file) => ({ file, lines: readFileSync(file, "utf8").split("\n").length - 1 }))
  .filter((f) => f.lines >= LIMIT)
  .sort((a, b) => b.lines - a.lines);

if (tooLong.length > 0) {
  process.stderr.write(
    `check:size: ${tooLong.length} hand-written source file(s) of ${LIMIT} lines or more; split each by responsibility:\n`,
  );
  for (const { file, lines } of tooLong) process.stderr.write(`  ${file}: ${lines} lines\n`);
  process.exitCode = 1;
} else {
  process.stdout.write(`check:size: ${files.length} hand-written source files, each under ${LIMIT} lines\n`);
}
