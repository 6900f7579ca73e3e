// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto


/**
 * CallStatus is a failed call's gRPC status and the catalog error it carried (what a unary call
 * sends as its status and trailing metadata).
 */
export interface CallStatus {
  /**
   * A google.rpc.Code (grpc status) other than OK.
   */
  'code'?: (number);
  'message'?: (string);
  /**
   * The catalog error code (trailer tollgate-error-code), empty when there is none.
   */
  'errorCode'?: (string);
  /**
   * JSON of the error's detail (trailer tollgate-error-detail), empty when there is none.
   */
  'errorDetail'?: (string);
}

/**
 * CallStatus is a failed call's gRPC status and the catalog error it carried (what a unary call
 * sends as its status and trailing metadata).
 */
export interface CallStatus__Output {
  /**
   * A google.rpc.Code (grpc status) other than OK.
   */
  'code': (number);
  'message': (string);
  /**
   * The catalog error code (trailer tollgate-error-code), empty when there is none.
   */
  'errorCode': (string);
  /**
   * JSON of the error's detail (trailer tollgate-error-detail), empty when there is none.
   */
  'errorDetail': (string);
}
