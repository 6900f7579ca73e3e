// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto


export interface ReleaseRequest {
  'requestId'?: (string);
  'paymentId'?: (string);
  /**
   * Why the call failed, for the settlement event ("upstream_unavailable", ...).
   */
  'reason'?: (string);
}

export interface ReleaseRequest__Output {
  'requestId': (string);
  'paymentId': (string);
  /**
   * Why the call failed, for the settlement event ("upstream_unavailable", ...).
   */
  'reason': (string);
}
