import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { migrate, openDatabase } from "@tollgate/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MIGRATIONS as QUOTA } from "../../services/quota-meter/src/db/migrations.ts";
import { silentLogger } from "../quota-meter/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../support/postgres.ts";
import { runProcess } from "../support/run-process.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const SCRIPT = (
  JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")).scripts as Record<string, string>
).migrate!;
let server: TestDatabase;

beforeAll(async () => {
  server = await createTestDatabase("migrate_command");
  // quota-meter applies its own migrations at start-up: the database of a running mesh has them.
  const database = openDatabase({ url: server.url, logger: silentLogger(), applicationName: "migrate-test" });
  try {
    await migrate(database.db, QUOTA);
  } finally {
    await database.close();
  }
});

afterAll(() => server?.drop());

/** Runs `command` through the shell the way `pnpm migrate` does, with `node` this test's Node. */
function sh(command: string, env: Record<string, string | undefined>) {
  return runProcess("sh", ["-c", command], {
    cwd: REPO,
    env: {
      ...process.env,
      PATH: `${dirname(process.execPath)}:${process.env.PATH}`,
      DATABASE_URL_FILE: undefined,
      ...env,
    },
  });
}

/** The JSON lines of every service's entry, as one object. */
function merged(stdout: string) {
  const lines = stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  return {
    database: lines[0]?.database,
    applied: Object.assign({}, ...lines.map((l) => l.applied)),
  };
}

describe("pnpm migrate (each service's src/migrate.ts)", () => {
  it("applies what is pending on DATABASE_URL, every service's tables, and nothing twice", async () => {
    const env = { DATABASE_URL: server.url };
    const first = await sh(SCRIPT, env);
    expect(first.code, first.stderr).toBe(0);
    // quota-meter migrated its own tables at start-up; the settlement worker's are new here.
    expect(merged(first.stdout)).toMatchObject({
      database: "postgres://***@127.0.0.1:5432/…",
      applied: { "quota-meter": [], "settlement-worker": ["0001_ledger", "0002_released_calls"] },
    });
    const second = await sh(SCRIPT, env);
    expect(merged(second.stdout).applied).toEqual({ "quota-meter": [], "settlement-worker": [] });
    const down = await sh(SCRIPT, { DATABASE_URL: "postgres://postgres@127.0.0.1:1/x" });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain("migration failed on postgres://***@127.0.0.1:1/…");
  });

  it("exits 2 when given arguments, naming what it takes", async () => {
    for (const entry of [
      "services/quota-meter/src/migrate.ts",
      "services/settlement-worker/src/migrate.ts",
    ]) {
      const out = await sh(`node ${entry} now`, { DATABASE_URL: server.url });
      expect(out.code, entry).toBe(2);
      expect(out.stderr).toContain("takes no arguments");
      expect(out.stdout).toBe("");
    }
  });
});
