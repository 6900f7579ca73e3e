// The soak's instruments (soak.ts, heap-probe.ts) on real Node processes: the live-heap probe tells a
// leak (objects kept) from garbage (objects dropped), heap snapshots name the constructor that grew,
// the metrics parser reads a real prom-client registry, and the verdict is judged on the live heap,
// not on an RSS that rises to a plateau.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRegistry, prom } from "@tollgate/platform";
import { afterEach, describe, expect, it } from "vitest";
import {
  FLAT_LIVE_HEAP_KB_PER_MIN,
  gauge,
  gaugeSum,
  heapGrowth,
  probeLiveHeap,
  type SoakSample,
  slopes,
  takeHeapSnapshots,
} from "./soak.ts";

const PROBE = fileURLToPath(new URL("./heap-probe.ts", import.meta.url));
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * A Node process that, on each line on stdin, allocates 20,000 objects of class `Kept`: kept for
 * ever when `leak`, dropped at once otherwise.
 */
async function allocator(leak: boolean, nodeOptions: string[], env: Record<string, string> = {}) {
  const script = `
    class Kept { constructor(i) { this.id = "k" + i; this.payload = [i, i + 1, i + 2]; } }
    const kept = [];
    process.stdin.on("data", () => {
      const batch = [];
      for (let i = 0; i < 20000; i++) batch.push(new Kept(i));
      if (${leak}) kept.push(batch);
      process.stdout.write("done\\n");
    });
    process.stdout.write("ready\\n");`;
  const child = spawn(process.execPath, ["-e", script], {
    env: { ...process.env, NODE_OPTIONS: nodeOptions.join(" "), ...env },
    stdio: ["pipe", "pipe", "inherit"],
  });
  children.push(child);
  let seen = 0;
  const lines: (() => void)[] = [];
  child.stdout?.on("data", (d: Buffer) => {
    for (const _ of String(d).split("\n").filter(Boolean)) {
      seen++;
      lines.shift()?.();
    }
  });
  const next = (wanted: number) =>
    new Promise<void>((resolve) => {
      if (seen >= wanted) resolve();
      else lines.push(resolve);
    });
  await next(1);
  let rounds = 0;
  return {
    pid: child.pid as number,
    async allocate(times: number) {
      for (let i = 0; i < times; i++) {
        rounds++;
        child.stdin?.write("go\n");
        await next(1 + rounds);
      }
    },
  };
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "soak-test-"));
  dirs.push(dir);
  return dir;
}

describe("soak instruments", () => {
  it("the live-heap probe grows with objects kept and stays put with objects dropped", async () => {
    const dir = tempDir();
    const env = { SOAK_PROBE_DIR: dir };
    const leaky = await allocator(true, [`--import=${PROBE}`], env);
    const tidy = await allocator(false, [`--import=${PROBE}`], env);
    const targets = [
      { process: "leaky", pid: leaky.pid },
      { process: "tidy", pid: tidy.pid },
    ];
    await Promise.all([leaky.allocate(2), tidy.allocate(2)]);
    const before = await probeLiveHeap(targets, dir);
    await Promise.all([leaky.allocate(10), tidy.allocate(10)]);
    const after = await probeLiveHeap(targets, dir);
    // 200,000 objects of ~100 bytes each kept: several MB more; dropped: within 1 MB.
    expect((after.get("leaky") ?? 0) - (before.get("leaky") ?? 0)).toBeGreaterThan(5_000);
    expect(Math.abs((after.get("tidy") ?? 0) - (before.get("tidy") ?? 0))).toBeLessThan(1_024);
  }, 60_000);

  it("heap snapshots at start, middle and end name the constructor that grew, by count", async () => {
    const dir = tempDir();
    const leaky = await allocator(true, ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${dir}`]);
    const target = [{ process: "leaky", pid: leaky.pid }];
    const files: string[] = [];
    for (let i = 0; i < 3; i++) {
      await leaky.allocate(1);
      files.push(...(await takeHeapSnapshots(target, dir)).values());
    }
    expect(files).toHaveLength(3);
    const growth = heapGrowth("leaky", files);
    // Among the largest gains of the second half (with the arrays each Kept holds): 20,000 more Kept.
    expect(growth.top.find((g) => g.constructor === "Kept")?.countDelta).toBe(20_000);
    expect(growth.liveKb[2]).toBeGreaterThan(growth.liveKb[0] ?? 0);
  }, 120_000);

  it("reads heap in use and the event queues from a service's real metrics registry", async () => {
    const registry = createRegistry("soak-test");
    const depth = new prom.Gauge({
      name: "events_outbox_depth",
      help: "test",
      labelNames: ["publisher"],
      registers: [registry],
    });
    depth.set({ publisher: "a" }, 3);
    depth.set({ publisher: "b" }, 4);
    const text = await registry.metrics();
    expect(gauge(text, "nodejs_heap_size_used_bytes")).toBeGreaterThan(1_000_000);
    expect(gaugeSum(text, "events_outbox_depth")).toBe(7);
    expect(gaugeSum(text, "events_consumer_pending")).toBeUndefined();
  });

  it("judges flatness on the live heap: RSS rising to a plateau is flat, a live heap that keeps gaining is not", () => {
    const samples: SoakSample[] = [];
    for (let i = 0; i <= 60; i++) {
      const t = i / 6; // every 10 s for 10 minutes
      const probe = i % 6 === 0;
      // RSS: +6 MB a minute for 5 minutes, then level (V8 and the allocator at their working size).
      const rssKb = 100_000 + Math.min(t, 5) * 6_000;
      samples.push({
        t,
        process: "plateau",
        rssKb,
        fds: 30,
        heapUsedKb: 40_000 + (i % 3) * 5_000,
        ...(probe ? { liveHeapKb: 30_000 + (i % 12 === 0 ? 40 : 0) } : {}),
      });
      samples.push({
        t,
        process: "leak",
        rssKb,
        fds: 30,
        heapUsedKb: 40_000 + t * 600,
        ...(probe ? { liveHeapKb: 30_000 + t * 600 } : {}),
      });
    }
    const [plateau, leak] = slopes(samples, 10);
    expect(plateau?.rssKbPerMin).toBeGreaterThan(2_000);
    expect(plateau?.rssKbPerMinSecondHalf).toBe(0);
    expect(plateau?.flat).toBe(true);
    expect(leak?.liveHeapKbPerMinSecondHalf).toBe(600);
    expect(leak?.flat).toBe(false);
    expect(FLAT_LIVE_HEAP_KB_PER_MIN).toBeLessThan(600);
  });
});
