import { configOrExit, createLogger, scrubConsole } from "@tollgate/platform";
import { loadConfig } from "./config.ts";
import { startGateway } from "./server.ts";

const logger = createLogger("gateway");
scrubConsole();
const gateway = await startGateway(configOrExit(logger, loadConfig), logger);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    logger.info({ signal }, "shutting down");
    await gateway.stop();
    process.exit(0);
  });
}
