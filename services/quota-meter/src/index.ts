export { loadConfig, type QuotaMeterConfig, SERVICE } from "./config.ts";
export { type QuotaMeterDeps, type QuotaMeterHandle, startQuotaMeter } from "./server.ts";
