// The soak's measurements (`pnpm chaos --soak 10m`): per process, resident memory and open file
// descriptors from /proc; for the Node services, the V8 heap in use and external memory from their
// metrics endpoints (prom-client's default metrics), and once a minute the live heap: what is left
// after a full collection (heap-probe.ts, preloaded into each service). RSS and heap-in-use of a V8
// process rise to a plateau as its heap spaces, compiled code and allocator pools grow to their
// working size, and move in a sawtooth of garbage; a leak is what the live heap keeps gaining, so
// flatness is judged on its slope over the second half of the run. Optional heap snapshots
// (`--heap-snapshots dir`) at start, middle and end, compared by constructor, name what grows.
import { createReadStream, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "../support/eventually.ts";

export interface SoakTarget {
  process: string;
  pid: number;
  /** The service's metrics port (prom-client), when it is one of ours. */
  metricsPort?: number;
}

export interface SoakSample {
  /** Minutes since the soak started (after warm-up). */
  t: number;
  process: string;
  rssKb: number;
  fds: number;
  /** V8 heap in use (nodejs_heap_size_used_bytes), KB; absent for redis-server and nats-server. */
  heapUsedKb?: number;
  /** Memory held outside the V8 heap by JS objects (nodejs_external_memory_bytes), KB. */
  externalKb?: number;
  /** Heap V8 has reserved (nodejs_heap_size_total_bytes), KB: what RSS follows. */
  heapTotalKb?: number;
  /** Heap in use right after a full collection (the once-a-minute probe), KB. */
  liveHeapKb?: number;
  /** Events waiting in the service's outboxes for a JetStream ack (events_outbox_depth, summed). */
  outboxDepth?: number;
  /** Events in the streams not yet delivered to its consumers (events_consumer_pending, summed). */
  consumerPending?: number;
}

export interface SoakSlope {
  process: string;
  rssKbPerMin: number;
  /** RSS slope over the second half of the run: ~0 where the first half's rise was a plateau. */
  rssKbPerMinSecondHalf: number;
  fdsPerMin: number;
  /** Live heap (after a full collection) at the first and the last probe, KB. */
  liveHeapKb?: { first: number; last: number };
  /** Slope of the live heap over the whole run and over its second half. */
  liveHeapKbPerMin?: number;
  liveHeapKbPerMinSecondHalf?: number;
  /** Slope of every heap-in-use sample (garbage included: the sawtooth between collections). */
  heapUsedKbPerMin?: number;
  externalKbPerMin?: number;
  /** Slope of the heap V8 has reserved, whole run and second half. */
  heapTotalKbPerMin?: number;
  heapTotalKbPerMinSecondHalf?: number;
  /** The most events queued (outbox depth + consumer lag) in any sample, and in the last one. */
  queued?: { max: number; last: number };
  /** The live heap's second-half slope is under FLAT_LIVE_HEAP_KB_PER_MIN. */
  flat?: boolean;
}

/**
 * A live heap gaining less than this per minute over the second half of a soak counts as flat. A
 * leak of one 100-byte object per call at the soak's ~100 calls a second gains 600 KB a minute;
 * caches that fill to their bound (payment-verifier's signature memo) gain less and stop.
 */
export const FLAT_LIVE_HEAP_KB_PER_MIN = 100;

/** One sample of every target: /proc for RSS and fds, the metrics endpoint for the heap. */
export async function sample(targets: SoakTarget[], t: number): Promise<SoakSample[]> {
  return Promise.all(
    targets.map(async (target) => ({
      t,
      process: target.process,
      ...procStats(target.pid),
      ...(target.metricsPort ? await heapStats(target.metricsPort) : {}),
    })),
  );
}

/**
 * The live heap of every Node target: each one, sent SIGWINCH, runs a full collection and writes
 * its memory use to `dir` (heap-probe.ts). Targets that do not answer within 10 s are left out.
 */
export async function probeLiveHeap(targets: SoakTarget[], dir: string): Promise<Map<string, number>> {
  const sent = Date.now();
  const waiting = new Map<string, number>();
  for (const t of targets) {
    try {
      process.kill(t.pid, "SIGWINCH");
      waiting.set(t.process, t.pid);
    } catch {
      // exited meanwhile (a restart): no probe this minute
    }
  }
  const live = new Map<string, number>();
  // Every target answered, or the 10 s are over (those left out).
  await eventually(
    () => {
      for (const [name, pid] of waiting) {
        const file = join(dir, `${pid}.json`);
        if (!existsSync(file)) continue;
        const probe = JSON.parse(readFileSync(file, "utf8")) as { at: number; heapUsed: number };
        if (probe.at < sent) continue;
        live.set(name, Math.round(probe.heapUsed / 1024));
        waiting.delete(name);
      }
      return waiting.size;
    },
    0,
    10_000,
    200,
  );
  return live;
}

function procStats(pid: number): { rssKb: number; fds: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return { rssKb, fds: readdirSync(`/proc/${pid}/fd`).length };
  } catch {
    return { rssKb: 0, fds: 0 };
  }
}

async function heapStats(
  port: number,
): Promise<
  Pick<SoakSample, "heapUsedKb" | "heapTotalKb" | "externalKb" | "outboxDepth" | "consumerPending">
> {
  try {
    const text = await (
      await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) })
    ).text();
    const heapUsed = gauge(text, "nodejs_heap_size_used_bytes");
    const external = gauge(text, "nodejs_external_memory_bytes");
    const heapTotal = gauge(text, "nodejs_heap_size_total_bytes");
    const outboxDepth = gaugeSum(text, "events_outbox_depth");
    const consumerPending = gaugeSum(text, "events_consumer_pending");
    return {
      ...(heapUsed !== undefined ? { heapUsedKb: Math.round(heapUsed / 1024) } : {}),
      ...(external !== undefined ? { externalKb: Math.round(external / 1024) } : {}),
      ...(heapTotal !== undefined ? { heapTotalKb: Math.round(heapTotal / 1024) } : {}),
      ...(outboxDepth !== undefined ? { outboxDepth } : {}),
      ...(consumerPending !== undefined ? { consumerPending } : {}),
    };
  } catch {
    return {}; // a sample missed (the service busy or restarting) is a gap, not a zero
  }
}

/** The value of an unlabelled-but-for-defaults gauge in Prometheus text format. */
export function gauge(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, "m").exec(text);
  return m ? Number(m[1]) : undefined;
}

/** The sum of every series of a gauge (all label sets), or undefined when the service has none. */
export function gaugeSum(text: string, name: string): number | undefined {
  let sum: number | undefined;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, "gm")))
    sum = (sum ?? 0) + Number(m[1]);
  return sum;
}

const round = (n: number) => Math.round(n * 10) / 10;

/** Least-squares slope of y over x. */
function slope(points: [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  const num = points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const den = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return den ? num / den : 0;
}

/** Per process: the slopes of the soak's samples (whole run and second half). */
export function slopes(samples: SoakSample[], minutes: number): SoakSlope[] {
  const half = minutes / 2;
  return [...new Set(samples.map((s) => s.process))].map((process) => {
    const mine = samples.filter((s) => s.process === process && s.rssKb > 0);
    const rss = mine.map((s): [number, number] => [s.t, s.rssKb]);
    const out: SoakSlope = {
      process,
      rssKbPerMin: round(slope(rss)),
      rssKbPerMinSecondHalf: round(slope(rss.filter(([t]) => t >= half))),
      fdsPerMin: round(slope(mine.map((s) => [s.t, s.fds]))),
    };
    const heap = mine.flatMap((s): [number, number][] => (s.heapUsedKb ? [[s.t, s.heapUsedKb]] : []));
    const live = mine.flatMap((s): [number, number][] => (s.liveHeapKb ? [[s.t, s.liveHeapKb]] : []));
    if (heap.length < 2) return out;
    const external = mine.flatMap((s): [number, number][] =>
      s.externalKb !== undefined ? [[s.t, s.externalKb]] : [],
    );
    const heapTotal = mine.flatMap((s): [number, number][] => (s.heapTotalKb ? [[s.t, s.heapTotalKb]] : []));
    const queued = mine.flatMap((s) =>
      s.outboxDepth !== undefined || s.consumerPending !== undefined
        ? [(s.outboxDepth ?? 0) + (s.consumerPending ?? 0)]
        : [],
    );
    const liveSecondHalf = live.filter(([t]) => t >= half);
    const secondHalf = round(slope(liveSecondHalf));
    return {
      ...out,
      ...(live.length >= 2
        ? {
            liveHeapKb: { first: live[0]?.[1] ?? 0, last: live.at(-1)?.[1] ?? 0 },
            liveHeapKbPerMin: round(slope(live)),
            liveHeapKbPerMinSecondHalf: secondHalf,
            // Three probes at least (a soak of 5 minutes or more): fewer make no slope to judge.
            ...(liveSecondHalf.length >= 3 ? { flat: secondHalf < FLAT_LIVE_HEAP_KB_PER_MIN } : {}),
          }
        : {}),
      heapUsedKbPerMin: round(slope(heap)),
      externalKbPerMin: round(slope(external)),
      heapTotalKbPerMin: round(slope(heapTotal)),
      heapTotalKbPerMinSecondHalf: round(slope(heapTotal.filter(([t]) => t >= half))),
      ...(queued.length ? { queued: { max: Math.max(...queued), last: queued.at(-1) ?? 0 } } : {}),
    };
  });
}

/**
 * Asks each process for a heap snapshot (SIGUSR2, which the services were started to answer with
 * `--heapsnapshot-signal`) and waits until each has written it to `dir` (`--diagnostic-dir`).
 * Writing one stops the process for a few seconds and forces a full collection first.
 */
export async function takeHeapSnapshots(targets: SoakTarget[], dir: string): Promise<Map<string, string>> {
  const before = new Set(readdirSync(dir));
  const files = new Map<string, string>();
  for (const target of targets) {
    try {
      process.kill(target.pid, "SIGUSR2");
    } catch {
      continue;
    }
    // One at a time: each snapshot takes a core and doubles the process's memory while written.
    const written = await eventually(
      async () => {
        const file = readdirSync(dir).find(
          (f) => !before.has(f) && f.endsWith(".heapsnapshot") && f.includes(`.${target.pid}.`),
        );
        return file && (await settled(join(dir, file))) ? file : undefined;
      },
      (file) => file !== undefined,
      120_000,
      500,
    );
    if (written) {
      files.set(target.process, join(dir, written));
      before.add(written);
    }
  }
  return files;
}

/** A file whose size stopped changing (V8 writes a snapshot in chunks) and ends a JSON object. */
async function settled(path: string): Promise<boolean> {
  const a = statSync(path).size;
  // time-based: V8 gives no sign that a snapshot is complete; a size unchanged for 1 s (and a
  // closed JSON object, below) is the test of it.
  await new Promise((r) => setTimeout(r, 1_000));
  const b = statSync(path).size;
  if (a !== b || b === 0) return false;
  const tail = await new Promise<string>((resolve, reject) => {
    let text = "";
    createReadStream(path, { start: Math.max(0, b - 16), encoding: "utf8" })
      .on("data", (d) => {
        text += d;
      })
      .on("end", () => resolve(text))
      .on("error", reject);
  });
  return tail.trimEnd().endsWith("}");
}

interface HeapSummary {
  /** Self size of every live object, bytes. */
  totalBytes: number;
  nodes: number;
  /** By constructor (node type "object") or node type otherwise: count and self size. */
  byConstructor: Map<string, { count: number; bytes: number }>;
}

/** Self size and count per constructor of a V8 heap snapshot (DevTools' Summary, shallow sizes). */
function summarizeHeapSnapshot(path: string): HeapSummary {
  const snap = JSON.parse(readFileSync(path, "utf8")) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snap.snapshot.meta.node_fields;
  const width = fields.length;
  const typeAt = fields.indexOf("type");
  const nameAt = fields.indexOf("name");
  const sizeAt = fields.indexOf("self_size");
  const types = snap.snapshot.meta.node_types[0];
  const byConstructor = new Map<string, { count: number; bytes: number }>();
  let totalBytes = 0;
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt] as number] ?? "?";
    const size = snap.nodes[i + sizeAt] as number;
    totalBytes += size;
    const key =
      type === "object" || type === "native"
        ? (snap.strings[snap.nodes[i + nameAt] as number] ?? "?")
        : `(${type})`;
    const entry = byConstructor.get(key) ?? { count: 0, bytes: 0 };
    entry.count++;
    entry.bytes += size;
    byConstructor.set(key, entry);
  }
  return { totalBytes, nodes: snap.nodes.length / width, byConstructor };
}

export interface HeapGrowth {
  process: string;
  /** Live heap (self sizes summed) per snapshot, KB: start, middle, end. */
  liveKb: number[];
  /** The constructors that grew most between the middle and the end snapshot. */
  top: { constructor: string; countDelta: number; kbDelta: number }[];
}

/** Compares snapshots of one process (start, middle, end): what grew in the second half. */
export function heapGrowth(process: string, paths: string[]): HeapGrowth {
  const summaries = paths.map(summarizeHeapSnapshot);
  const mid = summaries.at(-2);
  const end = summaries.at(-1);
  const top: HeapGrowth["top"] = [];
  if (mid && end && mid !== end) {
    for (const [name, e] of end.byConstructor) {
      const m = mid.byConstructor.get(name) ?? { count: 0, bytes: 0 };
      top.push({
        constructor: name,
        countDelta: e.count - m.count,
        kbDelta: round((e.bytes - m.bytes) / 1024),
      });
    }
    top.sort((a, b) => b.kbDelta - a.kbDelta);
  }
  return { process, liveKb: summaries.map((s) => round(s.totalBytes / 1024)), top: top.slice(0, 8) };
}

const kb = (n: number | undefined) => (n === undefined ? "–" : Math.round(n).toLocaleString("en-US"));

/** The soak's tables as the README shows them: slopes per process, then what the snapshots found. */
export function soakTable(soak: {
  minutes: number;
  slopes: SoakSlope[];
  outboxFiles: number;
  answered?: Record<string, Record<string, number>>;
  heapSnapshots?: HeapGrowth[];
  pods?: {
    limitsMb: Record<string, number>;
    peakMb: Record<string, number>;
    oomKills: Record<string, number>;
  };
}): string {
  const lines = [
    "| Process | Live heap first → last (MB) | Live heap slope (KB/min) | Live heap slope, 2nd half (KB/min) | Flat | Heap in use slope (KB/min) | External slope (KB/min) | RSS slope (KB/min) | RSS slope, 2nd half (KB/min) | Open fds slope (/min) | Events queued, max / last |",
    `|${"---|".repeat(11)}`,
    ...soak.slopes.map((s) =>
      [
        s.process,
        s.liveHeapKb
          ? `${(s.liveHeapKb.first / 1024).toFixed(1)} → ${(s.liveHeapKb.last / 1024).toFixed(1)}`
          : "–",
        kb(s.liveHeapKbPerMin),
        kb(s.liveHeapKbPerMinSecondHalf),
        s.flat === undefined ? "–" : s.flat ? "yes" : "NO",
        kb(s.heapUsedKbPerMin),
        kb(s.externalKbPerMin),
        kb(s.rssKbPerMin),
        kb(s.rssKbPerMinSecondHalf),
        s.fdsPerMin,
        s.queued ? `${s.queued.max} / ${s.queued.last}` : "–",
      ].join(" | "),
    ),
  ].map((l) => (l.startsWith("|") ? l : `| ${l} |`));
  lines.push("", `outbox files left: ${soak.outboxFiles}`);
  if (soak.pods) {
    lines.push("", "| Service | Limit (MB) | Peak in its group (MB) | OOM kills |", "|---|---|---|---|");
    for (const [service, limit] of Object.entries(soak.pods.limitsMb))
      lines.push(
        `| ${service} | ${limit} | ${soak.pods.peakMb[service] ?? "–"} | ${soak.pods.oomKills[service] ?? "–"} |`,
      );
  }
  if (soak.answered) lines.push(`answered while sampled: ${JSON.stringify(soak.answered)}`);
  for (const h of soak.heapSnapshots ?? []) {
    lines.push(
      `heap snapshots ${h.process}: live ${h.liveKb.map((k) => `${(k / 1024).toFixed(1)} MB`).join(" → ")}; grew most in the 2nd half: ${h.top
        .slice(0, 5)
        .map(
          (t) =>
            `${t.constructor} ${t.kbDelta >= 0 ? "+" : ""}${t.kbDelta} KB (${t.countDelta >= 0 ? "+" : ""}${t.countDelta})`,
        )
        .join(", ")}`,
    );
  }
  return lines.join("\n");
}
