// Original file: ../../proto/tollgate/rpc/v1/rpc_proxy.proto


export interface ExecuteResponse {
  /**
   * The operation's `data` payload as a JSON object.
   */
  'dataJson'?: (string);
  /**
   * Upstream HTTP round trips the operation used (batches count once).
   */
  'upstreamRoundTrips'?: (number);
}

export interface ExecuteResponse__Output {
  /**
   * The operation's `data` payload as a JSON object.
   */
  'dataJson': (string);
  /**
   * Upstream HTTP round trips the operation used (batches count once).
   */
  'upstreamRoundTrips': (number);
}
