export { type Database, openDatabase, readDatabaseUrl } from "./database.ts";
export { type MigrationSet, migrate, startMigrations } from "./migrate.ts";
export { migrateCommand } from "./migrate-command.ts";
