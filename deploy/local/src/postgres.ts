import { reachable } from "./ports.ts";
import { type RunningService, spawnService } from "./services.ts";

/** The embedded PostgreSQL's port under `pnpm start` (a free one for other meshes). */
export const EMBEDDED_POSTGRES_PORT = 9432;

/**
 * PGlite behind pglite-socket, its own process on loopback, its data under the state dir: the
 * system of record on a machine with only Node and npm.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  port: number,
  onLine: (service: "postgres", line: string) => void,
): Promise<{ url: string; process: RunningService }> {
  const child = await spawnService(
    "postgres",
    { LOG_LEVEL: "info" },
    onLine,
    () => reachable("127.0.0.1", port),
    60_000,
    // Liftoff only (V8's baseline WebAssembly compiler, no optimizing tier): the optimized copy of
    // PGlite's code held ~60 MB more resident and was no faster per query here (an upsert ~400 µs
    // of CPU either way, measured in a loop of 2,000 after warm-up).
    ["--liftoff-only", "deploy/local/src/pglite-server.ts", "--data", dataDir, "--port", String(port)],
  );
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, process: child };
}
