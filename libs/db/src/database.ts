// The one way a service talks to PostgreSQL: node-postgres (`pg`) under kysely's typed query
// builder, from a DATABASE_URL. The same driver and URL form reach the machine's PostgreSQL, a
// managed instance or a pooler in production, and the embedded PGlite behind pglite-socket that
// `pnpm start` runs (deploy/local).
import { ConfigError, type Logger, readSecret, redactUrl } from "@tollgate/platform";
import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";

/** DATABASE_URL (or DATABASE_URL_FILE): read as a secret, so its password never reaches a log. */
export function readDatabaseUrl(): string {
  const url = readSecret("DATABASE_URL");
  if (!url) {
    throw new ConfigError(
      "DATABASE_URL (or DATABASE_URL_FILE) is not set: the PostgreSQL system of record (postgres://user:password@host:5432/db; `pnpm start` runs an embedded one)",
    );
  }
  if (!/^postgres(ql)?:\/\//.test(url) || !URL.canParse(url)) {
    throw new ConfigError("DATABASE_URL must be a postgres:// URL");
  }
  return url;
}

const INT8 = 20;
const DATE = 1082;

// Counters are bigint columns well under 2^53 (limits are capped at 1e12): numbers, not strings.
// A `date` stays the 'YYYY-MM-DD' it is (pg's default turns it into a local-time Date). Amounts are
// numeric and stay decimal strings: atomic units exceed 2^53.
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (oid === INT8) return (v: string) => Number(v);
    if (oid === DATE) return (v: string) => v;
    return pg.types.getTypeParser(oid, format);
  }) as typeof pg.types.getTypeParser,
};

export interface DatabaseOptions {
  url: string;
  logger: Logger;
  /** Names the connections in pg_stat_activity. */
  applicationName: string;
  /** Pool size per process (keep the total under the server's or pooler's limit). */
  maxConnections?: number;
  /** How long to wait for a connection before a query fails. */
  connectTimeoutMs?: number;
  /** Client-side bound on one query (no server-side setting: poolers refuse startup options). */
  queryTimeoutMs?: number;
}

export interface Database<DB> {
  db: Kysely<DB>;
  /** Where it points, fit for a log line (no credentials). */
  where: string;
  close(): Promise<void>;
}

export function openDatabase<DB>(opts: DatabaseOptions): Database<DB> {
  const pool = new pg.Pool({
    connectionString: opts.url,
    application_name: opts.applicationName,
    max: opts.maxConnections ?? 5,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 3_000,
    query_timeout: opts.queryTimeoutMs ?? 30_000,
    idleTimeoutMillis: 30_000,
    types,
  });
  const where = redactUrl(opts.url);
  let lastLog = 0;
  // An idle connection dropped by the server (a restart, a failover) is an 'error' on the pool;
  // unheard, it would end the process. The pool replaces the connection on the next query.
  pool.on("error", (err) => {
    if (Date.now() - lastLog < 60_000) return;
    lastLog = Date.now();
    opts.logger.warn({ err: err.message, database: where }, "PostgreSQL connection lost; reconnecting");
  });
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  let closing: Promise<void> | undefined;
  return {
    db,
    where,
    close: () => {
      closing ??= db.destroy();
      return closing;
    },
  };
}
