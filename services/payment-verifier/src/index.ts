export {
  type Caip2,
  ConfigError,
  loadConfig,
  type PaymentVerifierConfig,
  type X402ExactConfig,
} from "./config.ts";
export {
  LEGACY_PAYMENT_HEADER,
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_SIGNATURE_HEADER,
} from "./schemes/x402-exact.ts";
export {
  type PaymentVerifierDeps,
  type PaymentVerifierHandle,
  SERVICE_NAME,
  startPaymentVerifier,
} from "./server.ts";
