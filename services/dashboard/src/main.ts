import { configOrExit, createLogger, scrubConsole } from "@tollgate/platform";
import { loadConfig, SERVICE } from "./config.ts";
import { startDashboard } from "./server.ts";

const logger = createLogger(SERVICE);
scrubConsole();
const dashboard = await startDashboard(configOrExit(logger, loadConfig), { logger });

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    dashboard.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  });
}
