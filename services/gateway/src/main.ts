import { runService } from "@tollgate/platform";
import { loadConfig } from "./config.ts";
import { startGateway } from "./server.ts";

await runService({
  name: "gateway",
  loadConfig,
  start: startGateway,
  ready: (gateway) => ({ port: gateway.port, metricsPort: gateway.metricsPort }),
});
