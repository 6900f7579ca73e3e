// The embedded PostgreSQL of `pnpm start`: PGlite (Postgres compiled to WebAssembly, from npm)
// behind pglite-socket on loopback, its own process, data in a directory that survives restarts.
// Services reach it with the same driver and DATABASE_URL form as a real server.
import { mkdirSync } from "node:fs";
import { parseArgs } from "node:util";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { createLogger } from "@tollgate/platform";

const logger = createLogger("postgres");
const { values } = parseArgs({
  options: { data: { type: "string" }, port: { type: "string" } },
});
if (!values.data || !values.port) throw new Error("usage: pglite-server.ts --data DIR --port N");
mkdirSync(values.data, { recursive: true });
const db = await PGlite.create({ dataDir: values.data });
// PGlite is one backend; the socket server multiplexes connections onto it, one query (or one
// open transaction) at a time. Enough for the few pooled connections of a local mesh.
const server = new PGLiteSocketServer({
  db,
  host: "127.0.0.1",
  port: Number(values.port),
  maxConnections: 64,
});
await server.start();
logger.info({ port: Number(values.port), data: values.data }, "embedded PostgreSQL (PGlite) ready");

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
