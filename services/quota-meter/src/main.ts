import { runService } from "@tollgate/platform";
import { loadConfig, SERVICE } from "./config.ts";
import { startQuotaMeter } from "./server.ts";

await runService({
  name: SERVICE,
  loadConfig,
  start: (config, logger) => startQuotaMeter(config, { logger }),
  ready: (service) => ({
    grpcPort: service.grpcPort,
    metricsPort: service.metricsPort,
    store: service.storeKind,
  }),
});
