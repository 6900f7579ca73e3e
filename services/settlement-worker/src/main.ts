import { configOrExit, createLogger, scrubConsole } from "@tollgate/platform";
import { loadConfig, SERVICE } from "./config.ts";
import { startSettlementWorker } from "./server.ts";

const logger = createLogger(SERVICE);
scrubConsole();
const config = configOrExit(logger, loadConfig);
const worker = await startSettlementWorker(config, { logger });
logger.info({ grpcPort: worker.grpcPort, metricsPort: worker.metricsPort }, "ready");

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    worker.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  });
}
