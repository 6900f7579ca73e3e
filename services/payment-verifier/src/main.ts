import { configOrExit, createLogger, scrubConsole } from "@tollgate/platform";
import { loadConfig } from "./config.ts";
import { startPaymentVerifier } from "./server.ts";

const logger = createLogger("payment-verifier");
scrubConsole();
const config = configOrExit(logger, loadConfig);
// A library promise nobody awaited must not take every in-flight payment down with the process.
process.on("unhandledRejection", (err) => logger.error({ err }, "unhandled promise rejection"));
const eventsNamespace = process.env.EVENTS_NAMESPACE;
const verifier = await startPaymentVerifier(config, {
  logger,
  ...(eventsNamespace ? { eventsNamespace } : {}),
});
logger.info(
  {
    grpcPort: verifier.grpcPort,
    metricsPort: verifier.metricsPort,
    network: config.x402.network,
    asset: config.x402.asset,
    payTo: config.x402.payTo,
    facilitator: config.x402.facilitator.mode,
    schemes: config.schemes,
    reservations: verifier.reservationStore,
  },
  "ready",
);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    logger.info({ signal }, "shutting down");
    await verifier.stop();
    process.exit(0);
  });
}
