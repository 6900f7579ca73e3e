import { runService } from "@tollgate/platform";
import { loadConfig } from "./config.ts";
import { startRpcProxy } from "./server.ts";

await runService({
  name: "rpc-proxy",
  loadConfig,
  start: (config, logger) => {
    for (const network of config.networks) {
      if (network.upstreams.length === 0) logger.warn({ network: network.name }, "no upstream configured");
    }
    return startRpcProxy(config, { logger });
  },
  ready: (proxy, config) => ({
    grpcPort: proxy.grpcPort,
    metricsPort: proxy.metricsPort,
    // Labels only: upstream URLs may embed API keys.
    upstreams: Object.fromEntries(config.networks.map((n) => [n.name, n.upstreams.length])),
  }),
});
