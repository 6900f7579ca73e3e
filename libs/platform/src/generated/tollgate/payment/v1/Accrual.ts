// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto


/**
 * Accrual is a charge to a payment channel, collected later by the settlement worker.
 */
export interface Accrual {
  'channel'?: (string);
  /**
   * This call's charge, atomic units.
   */
  'amount'?: (string);
  /**
   * The channel's charged total after this call, atomic units.
   */
  'cumulative'?: (string);
}

/**
 * Accrual is a charge to a payment channel, collected later by the settlement worker.
 */
export interface Accrual__Output {
  'channel': (string);
  /**
   * This call's charge, atomic units.
   */
  'amount': (string);
  /**
   * The channel's charged total after this call, atomic units.
   */
  'cumulative': (string);
}
