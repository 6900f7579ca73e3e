// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto


/**
 * Problem is an RFC 9457 problem a payment protocol defines for a refusal (MPP's types under
 * https://paymentauth.org/problems/). The gateway adds its members to the 402 envelope.
 */
export interface Problem {
  'type'?: (string);
  'title'?: (string);
  'detail'?: (string);
}

/**
 * Problem is an RFC 9457 problem a payment protocol defines for a refusal (MPP's types under
 * https://paymentauth.org/problems/). The gateway adds its members to the 402 envelope.
 */
export interface Problem__Output {
  'type': (string);
  'title': (string);
  'detail': (string);
}
