import { fileURLToPath } from "node:url";
import type { MigrationSet } from "@tollgate/db";

/** The worker's migrations: numbered SQL files, applied at start-up and by `pnpm migrate` (src/migrate.ts). */
export const MIGRATIONS: MigrationSet = {
  owner: "settlement-worker",
  folder: fileURLToPath(new URL("../migrations", import.meta.url)),
};
