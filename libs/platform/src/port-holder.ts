// When a listener cannot bind (EADDRINUSE), say who holds the port in one line, instead of a stack:
// another process listening (its pid and command), a client connected to itself (its source port was
// the port we wanted, as happens inside the OS's ephemeral range), or a closed connection in
// TIME-WAIT. Linux's /proc/net/tcp{,6} and /proc/<pid>/fd tell it; elsewhere the line says less.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** The address and port an EADDRINUSE error names (Node's listen error or grpc-js's bind summary). */
export function addressInUse(err: unknown): { host: string; port: number } | undefined {
  if (!(err instanceof Error)) return undefined;
  const e = err as Error & { code?: string; address?: string; port?: number };
  if (e.code === "EADDRINUSE" && e.port !== undefined) return { host: e.address ?? "", port: e.port };
  const m = /EADDRINUSE:?[^\]]*?\s\[?([0-9a-fA-F.:]*?)\]?:(\d+)/.exec(e.message);
  return m ? { host: m[1] ?? "", port: Number(m[2]) } : undefined;
}

interface Socket {
  local: string;
  remote: string;
  state: string;
  inode: string;
}

// /proc/net/tcp's states (include/net/tcp_states.h).
const ESTABLISHED = "01";
const TIME_WAIT = "06";
const LISTEN = "0A";

/** "0100007F:2526" → "127.0.0.1:9510" (IPv4 words are little-endian; IPv6 shown as hex). */
function endpoint(hex: string): { text: string; port: number } {
  const [addr = "", port = "0"] = hex.split(":");
  const p = Number.parseInt(port, 16);
  const ip =
    addr.length === 8
      ? [6, 4, 2, 0].map((i) => Number.parseInt(addr.slice(i, i + 2), 16)).join(".")
      : `[${addr.toLowerCase()}]`;
  return { text: `${ip}:${p}`, port: p };
}

function socketsOn(port: number): Socket[] {
  const found: Socket[] = [];
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const local = endpoint(f[1] ?? "");
      if (local.port !== port) continue;
      found.push({
        local: local.text,
        remote: endpoint(f[2] ?? "").text,
        state: f[3] ?? "",
        inode: f[9] ?? "0",
      });
    }
  }
  return found;
}

/** The process holding a socket, when this user may look into it. */
function ownerOf(inode: string): string | undefined {
  if (inode === "0") return undefined;
  const target = `socket:[${inode}]`;
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // another user's process, or gone
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) !== target) continue;
      } catch {
        continue;
      }
      let command = "";
      try {
        command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
      } catch {
        // exited meanwhile
      }
      return `pid ${pid}${command ? ` (${command.slice(0, 120)})` : ""}`;
    }
  }
  return undefined;
}

/** Who holds `port`: one sentence for a log line. */
function describePortHolder(port: number): string {
  const sockets = socketsOn(port);
  const listener = sockets.find((s) => s.state === LISTEN);
  if (listener) {
    const owner = ownerOf(listener.inode);
    return `another process listens on it: ${owner ?? "one this user cannot see (try `ss -ltnp`)"}`;
  }
  const self = sockets.find((s) => s.local === s.remote);
  if (self) {
    const owner = self.state === ESTABLISHED ? ownerOf(self.inode) : undefined;
    return `a client connected to itself (${self.local} to ${self.remote}${self.state === TIME_WAIT ? ", now in TIME-WAIT" : ""}${owner ? `, held by ${owner}` : ""}): it dialed this port while nothing listened and the OS gave it the same port as its source`;
  }
  const waiting = sockets.find((s) => s.state === TIME_WAIT);
  if (waiting)
    return `a closed connection in TIME-WAIT holds it (${waiting.local} to ${waiting.remote}), for up to 60 s`;
  const other = sockets[0];
  if (other) {
    const owner = ownerOf(other.inode);
    return `a connection from it holds it (${other.local} to ${other.remote}${owner ? `, ${owner}` : ""})`;
  }
  return "no socket on it is visible here (gone since, or another network namespace)";
}

/** The one line a service logs when it cannot bind: the port, who holds it, which setting moves it. */
export function portTakenMessage(host: string, port: number, env: NodeJS.ProcessEnv = process.env): string {
  const settings = Object.keys(env).filter((k) => /(^|_)PORT$/.test(k) && env[k] === String(port));
  const setting = settings.length ? `; set ${settings.join(" or ")} to another port` : "";
  return `port ${host ? `${host}:` : ""}${port} is taken: ${describePortHolder(port)}${setting}`;
}
