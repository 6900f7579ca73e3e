// The payment rails both payment-verifier and the settlement worker stand on: the x402 facilitator,
// the Tempo chain client, the channel and mppx state in Redis, and the settings that name them.
export { batchChannelStorage } from "./batch-channels.ts";
export {
  channelRecordKey,
  REFUND_HOLD_MS,
  REFUND_MARK_MS,
  REFUND_OUTCOME_MS,
  type RefundChannelState,
  type RefundMark,
  type RefundOutcome,
  type RefundRequest,
  refundKeys,
} from "./batch-refunds.ts";
export {
  type Address,
  type Caip2,
  chainIdOf,
  type FacilitatorConfig,
  facilitatorFromEnv,
  type MppChainConfig,
  mppChainFromEnv,
  paymentRedisPrefix,
  type X402BatchConfig,
  x402BatchFromEnv,
} from "./config.ts";
export { decimalAmount, isLoopback, parseAddress, publicDevAccounts } from "./config-guards.ts";
export { mppChainEnv, X402_BATCH_TERMS_ENV, X402_FACILITATOR_ENV, X402_SETTLEMENT_RPC_ENV } from "./env.ts";
export { FacilitatorUnavailableError } from "./errors.ts";
export { createFacilitator } from "./facilitator/facilitator.ts";
export type { Facilitator } from "./facilitator/types.ts";
export { jsonRpcTransport } from "./json-rpc-transport.ts";
export {
  type MppxState,
  memoryMppxState,
  redisMppxState,
  type StoredVoucher,
  type StoreScope,
  storeScope,
  undoDeduction,
} from "./mppx-store.ts";
export { READ_BACK_MS } from "./read-back.ts";
export { fastRecovery, libsecp256k1, type Recover } from "./secp256k1.ts";
export { type TempoClient, tempoClient } from "./tempo.ts";
