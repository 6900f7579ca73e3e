// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

/**
 * PaymentError is why a payment was refused (Verify) or not settled (Settle); the gateway answers
 * by it. Quota decisions are an enum the same way (tollgate.quota.v1.Decision).
 */
export const PaymentError = {
  /**
   * Not refused (valid, settled); also what a payment-verifier of the last release sends, which
   * fills only the deprecated error_code.
   */
  PAYMENT_ERROR_UNSPECIFIED: 'PAYMENT_ERROR_UNSPECIFIED',
  /**
   * No payment credential in the request: 402 with fresh offers.
   */
  PAYMENT_ERROR_PAYMENT_REQUIRED: 'PAYMENT_ERROR_PAYMENT_REQUIRED',
  /**
   * The payment is refused (for example a bad signature, a replay, a wrong amount): 402.
   */
  PAYMENT_ERROR_PAYMENT_INVALID: 'PAYMENT_ERROR_PAYMENT_INVALID',
  /**
   * Too many payment attempts from the client or for the payer: 429.
   */
  PAYMENT_ERROR_RATE_LIMITED: 'PAYMENT_ERROR_RATE_LIMITED',
  /**
   * What verifying or settling needs (a store, a facilitator, a settlement chain) is
   * unavailable: 503, retry.
   */
  PAYMENT_ERROR_SERVICE_UNAVAILABLE: 'PAYMENT_ERROR_SERVICE_UNAVAILABLE',
  /**
   * Verify with no_service: the payment is for a call, not an action of its own; nothing was
   * reserved and the gateway gives the request its ordinary answer.
   */
  PAYMENT_ERROR_NOT_APPLICABLE: 'PAYMENT_ERROR_NOT_APPLICABLE',
  /**
   * The payment's identifier (x402 payment-identifier) was used by this payer with another
   * payment or for another request: 409 payment_identifier_conflict. Nothing reserved.
   */
  PAYMENT_ERROR_IDENTIFIER_CONFLICT: 'PAYMENT_ERROR_IDENTIFIER_CONFLICT',
  /**
   * The first request with this payment and identifier is still being served: 409
   * payment_identifier_in_progress, retry after a second. Nothing reserved.
   */
  PAYMENT_ERROR_IDENTIFIER_IN_PROGRESS: 'PAYMENT_ERROR_IDENTIFIER_IN_PROGRESS',
} as const;

/**
 * PaymentError is why a payment was refused (Verify) or not settled (Settle); the gateway answers
 * by it. Quota decisions are an enum the same way (tollgate.quota.v1.Decision).
 */
export type PaymentError =
  /**
   * Not refused (valid, settled); also what a payment-verifier of the last release sends, which
   * fills only the deprecated error_code.
   */
  | 'PAYMENT_ERROR_UNSPECIFIED'
  | 0
  /**
   * No payment credential in the request: 402 with fresh offers.
   */
  | 'PAYMENT_ERROR_PAYMENT_REQUIRED'
  | 1
  /**
   * The payment is refused (for example a bad signature, a replay, a wrong amount): 402.
   */
  | 'PAYMENT_ERROR_PAYMENT_INVALID'
  | 2
  /**
   * Too many payment attempts from the client or for the payer: 429.
   */
  | 'PAYMENT_ERROR_RATE_LIMITED'
  | 3
  /**
   * What verifying or settling needs (a store, a facilitator, a settlement chain) is
   * unavailable: 503, retry.
   */
  | 'PAYMENT_ERROR_SERVICE_UNAVAILABLE'
  | 4
  /**
   * Verify with no_service: the payment is for a call, not an action of its own; nothing was
   * reserved and the gateway gives the request its ordinary answer.
   */
  | 'PAYMENT_ERROR_NOT_APPLICABLE'
  | 5
  /**
   * The payment's identifier (x402 payment-identifier) was used by this payer with another
   * payment or for another request: 409 payment_identifier_conflict. Nothing reserved.
   */
  | 'PAYMENT_ERROR_IDENTIFIER_CONFLICT'
  | 6
  /**
   * The first request with this payment and identifier is still being served: 409
   * payment_identifier_in_progress, retry after a second. Nothing reserved.
   */
  | 'PAYMENT_ERROR_IDENTIFIER_IN_PROGRESS'
  | 7

/**
 * PaymentError is why a payment was refused (Verify) or not settled (Settle); the gateway answers
 * by it. Quota decisions are an enum the same way (tollgate.quota.v1.Decision).
 */
export type PaymentError__Output = typeof PaymentError[keyof typeof PaymentError]
