// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { Header as _tollgate_payment_v1_Header, Header__Output as _tollgate_payment_v1_Header__Output } from '../../../tollgate/payment/v1/Header.ts';

/**
 * Answer is an HTTP answer the gateway gave, kept to be given again.
 */
export interface Answer {
  'status'?: (number);
  /**
   * The payment headers it carried (PAYMENT-RESPONSE).
   */
  'headers'?: (_tollgate_payment_v1_Header)[];
  /**
   * The body, exactly as sent (the JSON envelope).
   */
  'body'?: (string);
}

/**
 * Answer is an HTTP answer the gateway gave, kept to be given again.
 */
export interface Answer__Output {
  'status': (number);
  /**
   * The payment headers it carried (PAYMENT-RESPONSE).
   */
  'headers': (_tollgate_payment_v1_Header__Output)[];
  /**
   * The body, exactly as sent (the JSON envelope).
   */
  'body': (string);
}
