// What the benchmark reads from /proc: which process listens on a port, and the CPU time a
// process has used (utime + stime), so CPU per request is measured per process, not guessed.

import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

const TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

/** CPU time used by `pid` so far, in microseconds (undefined when it is gone). */
function cpuMicros(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return ((utime + stime) * 1e6) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** The pid of the process listening on 127.0.0.1:`port` (TCP), found through its socket inode. */
export function pidListeningOn(port: number): number | undefined {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      // local_address is ip:port in hex; state 0A is LISTEN.
      if (cols[1]?.endsWith(`:${hexPort}`) && cols[3] === "0A" && cols[9]) inodes.add(cols[9]);
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${entry}/fd/${fd}`);
        const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
        if (inode && inodes.has(inode)) return Number(entry);
      } catch {
        // the fd closed meanwhile
      }
    }
  }
  return undefined;
}

/** Samples CPU of named processes around a measurement: µs each used in between. */
export function cpuMeter(processes: Record<string, number[]>) {
  const read = () =>
    Object.fromEntries(
      Object.entries(processes).map(([name, pids]) => [
        name,
        pids.reduce((sum, pid) => sum + (cpuMicros(pid) ?? 0), 0),
      ]),
    );
  const start = read();
  return {
    stop(): Record<string, number> {
      const end = read();
      return Object.fromEntries(
        Object.keys(processes).map((name) => [name, (end[name] ?? 0) - (start[name] ?? 0)]),
      );
    },
  };
}

/** Resident memory (VmRSS) of named processes, in MB each (the sum of a name's pids). */
export function residentMb(processes: Record<string, number[]>): Record<string, number> {
  const rssKb = (pid: number) => {
    try {
      return Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
    } catch {
      return 0;
    }
  };
  return Object.fromEntries(
    Object.entries(processes).map(([name, pids]) => [
      name,
      Math.round(pids.reduce((sum, pid) => sum + rssKb(pid), 0) / 1024),
    ]),
  );
}
