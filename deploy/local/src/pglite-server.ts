// The embedded PostgreSQL of `pnpm start`: PGlite (Postgres compiled to WebAssembly, from npm)
// behind pglite-socket on loopback, its own process, data in a directory that survives restarts.
// Services reach it with the same driver and DATABASE_URL form as a real server.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
// The logger alone: the package's index would load gRPC, Redis and metrics too (~50 MB resident).
import { createLogger } from "@tollgate/platform/logger";

const logger = createLogger("postgres");
const { values } = parseArgs({
  options: { data: { type: "string" }, port: { type: "string" }, init: { type: "boolean" } },
});
if (!values.data || !values.port) throw new Error("usage: pglite-server.ts --data DIR --port N [--init]");
mkdirSync(values.data, { recursive: true });
if (values.init) {
  await (await PGlite.create({ dataDir: values.data })).close();
  process.exit(0);
}
// A new data directory is initialized (initdb) by a process of its own: WebAssembly memory never
// shrinks, and initdb grows PGlite's to ~500 MB that the server would then hold for its whole life.
if (!existsSync(join(values.data, "PG_VERSION"))) {
  execFileSync(process.execPath, [...process.execArgv, ...process.argv.slice(1), "--init"], {
    stdio: "inherit",
  });
}
// Postgres' own shared buffers are allocated inside that memory: 16 MB, not initdb's 128 MB, for the
// few tables of a local mesh (PGlite's start parameters kept, this one added).
const db = await PGlite.create({
  dataDir: values.data,
  startParams: [...PGlite.defaultStartParams, "-c", "shared_buffers=16MB"],
});
// PGlite is one backend; the socket server multiplexes connections onto it, one query (or one
// open transaction) at a time. Enough for the few pooled connections of a local mesh.
const server = new PGLiteSocketServer({
  db,
  host: "127.0.0.1",
  port: Number(values.port),
  maxConnections: 64,
});
pinExtendedQueries(server);
await server.start();
logger.info({ port: Number(values.port), data: values.data }, "embedded PostgreSQL (PGlite) ready");

/** What pinExtendedQueries needs of pglite-socket 0.2.17's (internal) query queue. */
interface QueuedMessage {
  handlerId: number;
  message: Uint8Array;
  resolve(bytes: number): void;
  reject(err: unknown): void;
  onData(data: Uint8Array): void;
}
interface QueryQueue {
  queue: QueuedMessage[];
  processing: boolean;
  lastHandlerId: number | null;
  processQueue(): Promise<void>;
  clearQueueForHandler(id: number): void;
}

/** Message types that end an extended-protocol batch (Sync) or are one on their own (Query, Terminate). */
const BATCH_END = new Set(["S".charCodeAt(0), "Q".charCodeAt(0), "X".charCodeAt(0)]);

/**
 * pglite-socket 0.2.17 queues the clients' protocol messages one by one and keeps a connection's
 * messages together only inside a transaction. Two pooled connections sending parameterized
 * queries at once then interleave Parse/Bind/Execute on the one backend: bind errors, or another
 * query's rows (electric-sql/pglite#1046, open). Here a connection that began an extended-protocol
 * batch keeps the backend until its Sync, as on a real server. Written against the pinned
 * package version (the start fails loudly if its queue is not the one expected); test/db runs
 * concurrent queries from several connections and the two services' migrations against it.
 */
function pinExtendedQueries(socketServer: PGLiteSocketServer): void {
  const q = (socketServer as unknown as { queryQueue: QueryQueue }).queryQueue;
  if (!q || typeof q.processQueue !== "function" || !Array.isArray(q.queue)) {
    throw new Error("pglite-socket's query queue is not the one pinExtendedQueries knows (version changed?)");
  }
  let batchOf: number | null = null;
  const clear = q.clearQueueForHandler.bind(q);
  q.clearQueueForHandler = (id) => {
    if (batchOf === id) batchOf = null;
    clear(id);
  };
  q.processQueue = async function processQueue(this: QueryQueue) {
    if (this.processing || this.queue.length === 0) return;
    this.processing = true;
    try {
      while (this.queue.length > 0) {
        // The connection in the middle of a batch or a transaction goes next, or nobody does.
        const owner = batchOf ?? (db.isInTransaction() ? this.lastHandlerId : null);
        const at = owner === null ? 0 : this.queue.findIndex((m) => m.handlerId === owner);
        if (at === -1) break;
        const [item] = this.queue.splice(at, 1) as [QueuedMessage];
        let bytes = 0;
        try {
          await db.runExclusive(() =>
            db.execProtocolRawStream(item.message, {
              onRawData: (data: Uint8Array) => {
                bytes += data.length;
                item.onData(data);
              },
            }),
          );
        } catch (err) {
          item.reject(err);
          continue;
        }
        this.lastHandlerId = item.handlerId;
        // A startup packet has no type byte (its first byte is a length byte, 0): never pinned.
        const type = item.message[0] ?? 0;
        batchOf = type === 0 || BATCH_END.has(type) ? null : item.handlerId;
        item.resolve(bytes);
      }
    } finally {
      this.processing = false;
    }
  };
}

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    // Closing PGlite flushes its data directory: the next start finds every row.
    void server
      .stop()
      .then(() => db.close())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, "embedded PostgreSQL did not close cleanly");
          process.exit(1);
        },
      );
  });
}
