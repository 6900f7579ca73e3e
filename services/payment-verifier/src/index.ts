export {
  ConfigError,
  loadConfig,
  type PaymentVerifierConfig,
  type X402Config,
} from "./config.ts";
export {
  type PaymentVerifierDeps,
  type PaymentVerifierHandle,
  SERVICE_NAME,
  startPaymentVerifier,
} from "./server.ts";
