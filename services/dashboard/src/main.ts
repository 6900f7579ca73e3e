import { configOrExit, createLogger, scrubConsole, stopOnSignals } from "@tollgate/platform";
import { loadConfig, SERVICE } from "./config.ts";
import { startDashboard } from "./server.ts";

const logger = createLogger(SERVICE);
scrubConsole();
const dashboard = await startDashboard(configOrExit(logger, loadConfig), { logger });

stopOnSignals(logger, () => dashboard.stop());
