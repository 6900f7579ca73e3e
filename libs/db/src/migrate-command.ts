// What a service's `src/migrate.ts` entry runs: its pending migrations, applied on the operator's
// word ahead of a rollout (`pnpm migrate` runs every service's), beside the ones each service
// applies at start-up. The database is DATABASE_URL (or DATABASE_URL_FILE), else the embedded one
// `pnpm start` runs, whose URL it writes to .tollgate/database-url.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createLogger, readSecret } from "@tollgate/platform";
import { openDatabase } from "./database.ts";
import { type MigrationSet, migrate } from "./migrate.ts";

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));

function databaseUrl(): string | undefined {
  const url = readSecret("DATABASE_URL");
  if (url) return url;
  const file = `${REPO_ROOT}.tollgate/database-url`;
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  return undefined;
}

/**
 * Applies `set`'s pending migrations and prints one JSON line, `{ database, applied: { owner: [names] } }`.
 * Exit code 0 done (nothing pending included), 1 failed (no database, or a migration failed), 2 usage.
 */
export async function migrateCommand(set: MigrationSet, argv = process.argv.slice(2)): Promise<void> {
  const fail = (message: string, code: number) => {
    process.stderr.write(`${set.owner} migrate: ${message}\n`);
    process.exitCode = code;
  };
  if (argv.length > 0) {
    return fail(
      `takes no arguments (${argv.join(" ")}); the database is DATABASE_URL or DATABASE_URL_FILE`,
      2,
    );
  }
  const url = databaseUrl();
  if (!url) {
    return fail(
      "no database: set DATABASE_URL (or DATABASE_URL_FILE), or start the local stack with `pnpm start`, which writes .tollgate/database-url",
      1,
    );
  }
  const name = `${set.owner}-migrate`;
  const database = openDatabase({ url, logger: createLogger(name), applicationName: name });
  try {
    const applied = await migrate(database.db, set);
    process.stdout.write(
      `${JSON.stringify({ database: database.where, applied: { [set.owner]: applied } })}\n`,
    );
  } catch (err) {
    fail(`migration failed on ${database.where}: ${err instanceof Error ? err.message : String(err)}`, 1);
  } finally {
    await database.close();
  }
}
