// Versioned migrations: numbered plain SQL files in a service's `migrations/` folder, applied in
// order by kysely's Migrator, all pending ones in one transaction under an advisory lock (replicas
// starting together apply each file once), recorded in a table per service. The same files run on
// PostgreSQL 15+ and on the embedded PGlite.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Kysely, sql } from "kysely";
import { type Migration, Migrator } from "kysely/migration";

const FILE = /^(\d{4})_[a-z0-9_]+\.sql$/;

/** Every `NNNN_name.sql` in `folder`, by name (their order is the order they apply in). */
function sqlMigrations(folder: string): Record<string, Migration> {
  const migrations: Record<string, Migration> = {};
  for (const file of readdirSync(folder).sort()) {
    if (!FILE.test(file)) continue;
    const text = readFileSync(join(folder, file), "utf8");
    // One simple-protocol round trip runs the whole file (a raw query without parameters).
    migrations[file.replace(/\.sql$/, "")] = {
      up: (db) =>
        sql
          .raw(text)
          .execute(db)
          .then(() => undefined),
    };
  }
  return migrations;
}

export interface MigrationSet {
  /** The owning service: its migrations are recorded in `<owner>_migrations`. */
  owner: string;
  folder: string;
}

/** Applies what is pending of `set`; resolves the names applied now (empty when up to date). */
// biome-ignore lint/suspicious/noExplicitAny: migrations run on any schema
export async function migrate(db: Kysely<any>, set: MigrationSet): Promise<string[]> {
  const table = `${set.owner.replace(/[^a-z0-9]/g, "_")}_migrations`;
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => sqlMigrations(set.folder) },
    migrationTableName: table,
    migrationLockTableName: `${table}_lock`,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === "Error")?.migrationName;
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`${set.owner} migration${failed ? ` ${failed}` : "s"} failed: ${reason}`);
  }
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}

export interface Migrations {
  /** Settles once the schema is up to date (never rejects: failures are retried). */
  readonly ready: Promise<void>;
  isReady(): boolean;
  stop(): void;
}

/**
 * Migrates at start-up, retrying while the database is unreachable, so a service can start (and
 * serve what needs no database) before PostgreSQL answers. One log line when it cannot reach the
 * database, one when the schema is up to date; a migration that fails on a reachable database is
 * an error logged on every try (the service cannot use the database until it is fixed).
 */
export function startMigrations(
  // biome-ignore lint/suspicious/noExplicitAny: migrations run on any schema
  db: Kysely<any>,
  set: MigrationSet,
  opts: {
    logger: { info(o: object, m: string): void; warn(o: object, m: string): void };
    where: string;
    retryMs?: number;
  },
): Migrations {
  let done = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const ready = new Promise<void>((resolve) => {
    let warned = false;
    const attempt = async () => {
      if (stopped) return;
      try {
        const applied = await migrate(db, set);
        done = true;
        opts.logger.info({ database: opts.where, applied }, "PostgreSQL schema up to date");
        resolve();
      } catch (err) {
        if (!warned || !isConnectionError(err)) {
          warned = true;
          opts.logger.warn(
            { database: opts.where, err: err instanceof Error ? err.message : String(err) },
            "PostgreSQL not migrated yet (unreachable or failing); retrying",
          );
        }
        timer = setTimeout(() => void attempt(), opts.retryMs ?? 2_000);
        timer.unref();
      }
    };
    void attempt();
  });
  return {
    ready,
    isReady: () => done,
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

/** A refused, reset or timed-out connection: the database is away, not the migration wrong. */
function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === "string" && /^(ECONN|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|57P0|08)/.test(code)) return true;
  return err instanceof Error && /timeout|terminated|Connection/i.test(err.message);
}
