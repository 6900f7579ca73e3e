// Load from a process of its own (load.ts runs autocannon), so the load generator's CPU is never
// counted as the mesh's and never competes with it inside one event loop.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type autocannon from "autocannon";

const here = fileURLToPath(new URL(".", import.meta.url));

/** Runs autocannon in its own process with these options; resolves with its result. */
export function load(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [join(here, "load.ts"), JSON.stringify(opts)],
      { maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
    );
  });
}
