// Original file: ../../proto/tollgate/mesh/v1/exchange.proto


/**
 * What the services' Exchange methods share (libs/platform/src/grpc-exchange.ts). An Exchange is a
 * bidirectional stream that carries a service's unary calls as messages, so a hot caller does not
 * open an HTTP/2 stream per call. Its request envelope has `id` (the caller's number for the call,
 * unique among its unanswered calls), `timeout_ms` (the unary call's deadline) and the oneof `call`,
 * whose member is named after the method (lowerCamelCase) and holds its request. Its answer has the
 * same `id` and the oneof `result`: the method's response under the same name, or `status` (a
 * CallStatus) when the call failed as the unary call would have.
 * 
 * Batches: each envelope may carry more calls (answers) in its repeated `more` field, sent together
 * in one message. Each side announces that it reads them with the metadata key
 * `tollgate-exchange-batch` (the caller in the stream's metadata, the server in its initial
 * metadata), and sends batches only to a side that announced it: an older replica gets one call per
 * message, as before.
 * 
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
 * What the services' Exchange methods share (libs/platform/src/grpc-exchange.ts). An Exchange is a
 * bidirectional stream that carries a service's unary calls as messages, so a hot caller does not
 * open an HTTP/2 stream per call. Its request envelope has `id` (the caller's number for the call,
 * unique among its unanswered calls), `timeout_ms` (the unary call's deadline) and the oneof `call`,
 * whose member is named after the method (lowerCamelCase) and holds its request. Its answer has the
 * same `id` and the oneof `result`: the method's response under the same name, or `status` (a
 * CallStatus) when the call failed as the unary call would have.
 * 
 * Batches: each envelope may carry more calls (answers) in its repeated `more` field, sent together
 * in one message. Each side announces that it reads them with the metadata key
 * `tollgate-exchange-batch` (the caller in the stream's metadata, the server in its initial
 * metadata), and sends batches only to a side that announced it: an older replica gets one call per
 * message, as before.
 * 
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
