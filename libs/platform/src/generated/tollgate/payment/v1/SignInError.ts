// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

/**
 * SignInError is why a proof was refused; the gateway answers by it.
 */
export const SignInError = {
  /**
   * Not refused (valid).
   */
  SIGN_IN_ERROR_UNSPECIFIED: 'SIGN_IN_ERROR_UNSPECIFIED',
  /**
   * The proof is malformed, for another origin, outside its time window, badly signed, or its
   * nonce was used: 401 `sign_in_invalid`, `reason` says which.
   */
  SIGN_IN_ERROR_INVALID: 'SIGN_IN_ERROR_INVALID',
  /**
   * Too many attempts from the client: 429.
   */
  SIGN_IN_ERROR_RATE_LIMITED: 'SIGN_IN_ERROR_RATE_LIMITED',
  /**
   * What verifying needs (the nonce store, the settlement chain for a smart wallet) is
   * unreachable: 503, retry with a fresh proof.
   */
  SIGN_IN_ERROR_SERVICE_UNAVAILABLE: 'SIGN_IN_ERROR_SERVICE_UNAVAILABLE',
} as const;

/**
 * SignInError is why a proof was refused; the gateway answers by it.
 */
export type SignInError =
  /**
   * Not refused (valid).
   */
  | 'SIGN_IN_ERROR_UNSPECIFIED'
  | 0
  /**
   * The proof is malformed, for another origin, outside its time window, badly signed, or its
   * nonce was used: 401 `sign_in_invalid`, `reason` says which.
   */
  | 'SIGN_IN_ERROR_INVALID'
  | 1
  /**
   * Too many attempts from the client: 429.
   */
  | 'SIGN_IN_ERROR_RATE_LIMITED'
  | 2
  /**
   * What verifying needs (the nonce store, the settlement chain for a smart wallet) is
   * unreachable: 503, retry with a fresh proof.
   */
  | 'SIGN_IN_ERROR_SERVICE_UNAVAILABLE'
  | 3

/**
 * SignInError is why a proof was refused; the gateway answers by it.
 */
export type SignInError__Output = typeof SignInError[keyof typeof SignInError]
