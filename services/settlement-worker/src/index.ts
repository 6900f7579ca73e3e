export { loadConfig, SERVICE, type SettlementWorkerConfig } from "./config.ts";
export { MIGRATIONS } from "./migrations.ts";
export { type SettlementWorkerHandle, startSettlementWorker } from "./server.ts";
