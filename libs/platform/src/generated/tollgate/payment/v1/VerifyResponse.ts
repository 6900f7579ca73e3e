// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { Header as _tollgate_payment_v1_Header, Header__Output as _tollgate_payment_v1_Header__Output } from '../../../tollgate/payment/v1/Header.ts';

export interface VerifyResponse {
  'valid'?: (boolean);
  /**
   * Names the reservation; passed back to Settle or Release.
   */
  'paymentId'?: (string);
  /**
   * Stable error code when invalid, for example "payment_invalid".
   */
  'errorCode'?: (string);
  /**
   * Human-readable reason when invalid.
   */
  'reason'?: (string);
  /**
   * Headers for the 402 answer when invalid (a fresh challenge).
   */
  'headers'?: (_tollgate_payment_v1_Header)[];
  'payer'?: (string);
  'scheme'?: (string);
}

export interface VerifyResponse__Output {
  'valid': (boolean);
  /**
   * Names the reservation; passed back to Settle or Release.
   */
  'paymentId': (string);
  /**
   * Stable error code when invalid, for example "payment_invalid".
   */
  'errorCode': (string);
  /**
   * Human-readable reason when invalid.
   */
  'reason': (string);
  /**
   * Headers for the 402 answer when invalid (a fresh challenge).
   */
  'headers': (_tollgate_payment_v1_Header__Output)[];
  'payer': (string);
  'scheme': (string);
}
