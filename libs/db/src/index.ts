export { type Database, type DatabaseOptions, openDatabase, readDatabaseUrl } from "./database.ts";
export {
  isConnectionError,
  type MigrationSet,
  type Migrations,
  migrate,
  sqlMigrations,
  startMigrations,
} from "./migrate.ts";
export { migrateCommand } from "./migrate-command.ts";
