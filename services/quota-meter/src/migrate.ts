// `node services/quota-meter/src/migrate.ts` (part of `pnpm migrate`): quota-meter's pending
// migrations, applied by the operator ahead of a rollout; the service also applies them at start-up.
import { migrateCommand } from "@tollgate/db";
import { MIGRATIONS } from "./db/migrations.ts";

await migrateCommand(MIGRATIONS);
