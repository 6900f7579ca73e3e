import { runService } from "@tollgate/platform";
import { loadConfig, SERVICE } from "./config.ts";
import { startSettlementWorker } from "./server.ts";

await runService({
  name: SERVICE,
  loadConfig,
  start: (config, logger) => startSettlementWorker(config, { logger }),
  ready: (worker) => ({ grpcPort: worker.grpcPort, metricsPort: worker.metricsPort }),
});
