// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto


/**
 * PaymentMeta is what the response envelope's meta shows for a paid call.
 */
export interface PaymentMeta {
  'costUsdc'?: (string);
  'paymentChain'?: (string);
  'paymentToken'?: (string);
}

/**
 * PaymentMeta is what the response envelope's meta shows for a paid call.
 */
export interface PaymentMeta__Output {
  'costUsdc': (string);
  'paymentChain': (string);
  'paymentToken': (string);
}
