// Private Redis and NATS servers (the machine's own binaries, on free loopback ports), for runs
// that must count or stop them alone: the benchmark reads their CPU, a chaos run kills them.
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, reachable } from "./ports.ts";
import { type RunningService, spawnService } from "./services.ts";

/** A binary on PATH, or in the sbin folders Debian installs servers to. */
function serverBinary(name: string): string {
  for (const dir of (process.env.PATH ?? "").split(":").concat(["/usr/sbin", "/usr/local/sbin", "/sbin"])) {
    const path = join(dir, name);
    if (dir && existsSync(path)) return path;
  }
  throw new Error(`${name} is not installed (Debian's package of the same name provides it)`);
}

export interface PrivateServer {
  url: string;
  port: number;
  process: RunningService;
}

/** A Redis server of its own: keeps nothing on disk, answers on 127.0.0.1 only. */
export async function startPrivateRedis(port?: number): Promise<PrivateServer> {
  const p = port ?? (await freePort());
  const server = await spawnService(
    "redis-server",
    {},
    () => {},
    () => reachable("127.0.0.1", p),
    10_000,
    ["--bind", "127.0.0.1", "--port", String(p), "--save", "", "--appendonly", "no"],
    serverBinary("redis-server"),
  );
  return { url: `redis://127.0.0.1:${p}`, port: p, process: server };
}

/** A NATS server with JetStream, its store in `storeDir` (a new temporary folder by default). */
export async function startPrivateNats(port?: number, storeDir?: string): Promise<PrivateServer> {
  const p = port ?? (await freePort());
  const dir = storeDir ?? mkdtempSync(join(tmpdir(), "tollgate-nats-"));
  const server = await spawnService(
    "nats-server",
    {},
    () => {},
    () => reachable("127.0.0.1", p),
    10_000,
    ["-a", "127.0.0.1", "-p", String(p), "-js", "-sd", dir],
    serverBinary("nats-server"),
  );
  return { url: `nats://127.0.0.1:${p}`, port: p, process: server };
}
