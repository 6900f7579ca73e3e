// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto


export interface KeepAnswerResponse {
  /**
   * The answer is kept for a retry (false: too large, or the payment's claim had lapsed).
   */
  'kept'?: (boolean);
}

export interface KeepAnswerResponse__Output {
  /**
   * The answer is kept for a retry (false: too large, or the payment's claim had lapsed).
   */
  'kept': (boolean);
}
