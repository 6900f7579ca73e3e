import { configOrExit, createLogger, scrubConsole, stopOnSignals } from "@tollgate/platform";
import { loadConfig, SERVICE } from "./config.ts";
import { startQuotaMeter } from "./server.ts";

const logger = createLogger(SERVICE);
scrubConsole();
const config = configOrExit(logger, loadConfig);
const service = await startQuotaMeter(config, { logger });
logger.info(
  { grpcPort: service.grpcPort, metricsPort: service.metricsPort, store: service.storeKind },
  "ready",
);

stopOnSignals(logger, () => service.stop());
