import { runService } from "@tollgate/platform";
import { loadConfig } from "./config.ts";
import { startPaymentVerifier } from "./server.ts";

await runService({
  name: "payment-verifier",
  loadConfig,
  start: (config, logger) => startPaymentVerifier(config, { logger }),
  ready: (verifier, config) => ({
    grpcPort: verifier.grpcPort,
    metricsPort: verifier.metricsPort,
    network: config.x402.network,
    asset: config.x402.asset,
    payTo: config.x402.payTo,
    facilitator: config.x402.facilitator.mode,
    schemes: config.schemes,
    reservations: verifier.reservationStore,
  }),
});
