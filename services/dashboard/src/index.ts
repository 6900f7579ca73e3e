export { type DashboardConfig, loadConfig } from "./config.ts";
export { type DashboardHandle, startDashboard } from "./server.ts";
