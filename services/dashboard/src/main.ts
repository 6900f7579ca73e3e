import { runService } from "@tollgate/platform";
import { loadConfig, SERVICE } from "./config.ts";
import { startDashboard } from "./server.ts";

await runService({
  name: SERVICE,
  loadConfig,
  start: (config, logger) => startDashboard(config, { logger }),
  ready: (dashboard) => ({ url: dashboard.url, port: dashboard.port, metricsPort: dashboard.metricsPort }),
});
