// Preloaded into every service by a soak (NODE_OPTIONS=--import): on SIGWINCH (ignored by default,
// used by nothing in the mesh) it collects all available garbage and writes process.memoryUsage()
// to SOAK_PROBE_DIR/<pid>.json. What is left after a full collection is the live heap: the measure
// a leak shows on, free of the sawtooth of garbage between collections that heapUsed and RSS carry.
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

const dir = process.env.SOAK_PROBE_DIR;
if (dir) {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as (options: object) => void;
  process.on("SIGWINCH", () => {
    // The collection a heap snapshot makes (all available garbage, weak references and flushable
    // bytecode included): one regular full collection leaves some of it, a slow sawtooth of its own.
    gc({ type: "major", execution: "sync", flavor: "last-resort" });
    const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
    const file = join(dir, `${process.pid}.json`);
    // Written whole, then renamed: the reader never sees half a file.
    writeFileSync(
      `${file}.tmp`,
      JSON.stringify({ at: Date.now(), rss, heapUsed, heapTotal, external, arrayBuffers }),
    );
    renameSync(`${file}.tmp`, file);
  });
}
