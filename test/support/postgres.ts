// Tests use the machine's PostgreSQL server (127.0.0.1:5432, trust auth; `pnpm test` starts it), each
// suite in a database of its own, dropped after: suites run side by side on the shared server.
import { randomBytes } from "node:crypto";
import pg from "pg";

/** The server's maintenance connection (TEST_POSTGRES_URL overrides). */
const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export interface TestDatabase {
  url: string;
  name: string;
  /** Runs one query on the database (a fresh connection each time, closed after). */
  query<R extends object = Record<string, unknown>>(text: string, values?: unknown[]): Promise<R[]>;
  drop(): Promise<void>;
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>, url = POSTGRES_URL): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A new, empty database on the machine's server. */
export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const name = `tg_${label
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, "_")
    .slice(0, 30)}_${randomBytes(4).toString("hex")}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    query: async <R extends object>(text: string, values?: unknown[]) =>
      admin(async (c) => (await c.query(text, values)).rows as R[], url.toString()),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}
