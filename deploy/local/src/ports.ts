import { closeSync, mkdirSync, openSync, statSync, unlinkSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

function tryListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(undefined));
    server.listen(port, "127.0.0.1", () => {
      const address = server.address();
      const bound = typeof address === "object" && address ? address.port : undefined;
      server.close(() => resolve(bound));
    });
  });
}

/** Ports handed out on this machine in the last minute, one file each: shared by every process. */
const CLAIMS = join(tmpdir(), "tollgate-port-claims");
const CLAIM_MS = 60_000;

/**
 * Claims `port` for a minute across processes (test workers start meshes at once; a port picked by
 * one and not yet bound could be picked by another: EADDRINUSE at start). False: claimed already.
 */
function claim(port: number): boolean {
  const file = join(CLAIMS, String(port));
  try {
    mkdirSync(CLAIMS, { recursive: true });
    try {
      if (Date.now() - statSync(file).mtimeMs < CLAIM_MS) return false;
      unlinkSync(file);
    } catch {
      // no claim yet
    }
    closeSync(openSync(file, "wx"));
    return true;
  } catch {
    return false; // claimed by another process a moment ago
  }
}

/**
 * A port that was free a moment ago on 127.0.0.1, and not handed out on this machine in the last
 * minute. Picked below Linux's ephemeral range
 * (32768-60999), where every outgoing connection also takes its local port: a port the OS hands
 * out for `listen(0)` can be taken by a client socket before our service binds it.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!claim(port)) continue;
    const bound = await tryListen(port);
    if (bound) return bound;
  }
  const any = await tryListen(0);
  if (!any) throw new Error("no free port on 127.0.0.1");
  return any;
}

/** Whether something accepts TCP connections at host:port within `timeoutMs`. */
export function reachable(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    import("node:net").then(({ connect }) => {
      const socket = connect({ host, port });
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(timeoutMs, () => done(false));
      socket.once("connect", () => done(true));
      socket.once("error", () => done(false));
    });
  });
}
