import { fileURLToPath } from "node:url";
import type { MigrationSet } from "@tollgate/db";

/** quota-meter's migrations: numbered SQL files, applied at start-up and by `pnpm migrate` (src/migrate.ts). */
export const MIGRATIONS: MigrationSet = {
  owner: "quota-meter",
  folder: fileURLToPath(new URL("../../migrations", import.meta.url)),
};
