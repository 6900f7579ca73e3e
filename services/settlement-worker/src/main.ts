import { configOrExit, createLogger, scrubConsole, stopOnSignals } from "@tollgate/platform";
import { loadConfig, SERVICE } from "./config.ts";
import { startSettlementWorker } from "./server.ts";

const logger = createLogger(SERVICE);
scrubConsole();
const config = configOrExit(logger, loadConfig);
const worker = await startSettlementWorker(config, { logger });
logger.info({ grpcPort: worker.grpcPort, metricsPort: worker.metricsPort }, "ready");

stopOnSignals(logger, () => worker.stop());
