// `node services/settlement-worker/src/migrate.ts` (part of `pnpm migrate`): the ledger's pending
// migrations, applied by the operator ahead of a rollout; the worker also applies them at start-up.
import { migrateCommand } from "@tollgate/db";
import { MIGRATIONS } from "./migrations.ts";

await migrateCommand(MIGRATIONS);
