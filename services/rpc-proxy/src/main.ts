import { configOrExit, createLogger, scrubConsole } from "@tollgate/platform";
import { loadConfig } from "./config.ts";
import { startRpcProxy } from "./server.ts";

const logger = createLogger("rpc-proxy");
scrubConsole();
const config = configOrExit(logger, loadConfig);
for (const network of config.networks) {
  if (network.upstreams.length === 0) logger.warn({ network: network.name }, "no upstream configured");
}
const proxy = await startRpcProxy(config, { logger });
// Launchers wait for this line, so it is written whatever LOG_LEVEL says.
logger.child({}, { level: "info" }).info(
  {
    grpcPort: proxy.grpcPort,
    metricsPort: proxy.metricsPort,
    // Labels only: upstream URLs may embed API keys.
    upstreams: Object.fromEntries(config.networks.map((n) => [n.name, n.upstreams.length])),
  },
  "ready",
);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    logger.info({ signal }, "shutting down");
    await proxy.stop();
    process.exit(0);
  });
}
