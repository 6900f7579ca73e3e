// Original file: ../../proto/tollgate/rpc/v1/rpc_proxy.proto


export interface ExecuteRequest {
  /**
   * Correlates logs across the mesh.
   */
  'requestId'?: (string);
  /**
   * Catalog operation id, for example "blockNumber".
   */
  'operation'?: (string);
  /**
   * Network name, for example "ethereum".
   */
  'network'?: (string);
  /**
   * Validated parameters as a JSON object, shaped by the operation's schema.
   */
  'paramsJson'?: (string);
}

export interface ExecuteRequest__Output {
  /**
   * Correlates logs across the mesh.
   */
  'requestId': (string);
  /**
   * Catalog operation id, for example "blockNumber".
   */
  'operation': (string);
  /**
   * Network name, for example "ethereum".
   */
  'network': (string);
  /**
   * Validated parameters as a JSON object, shaped by the operation's schema.
   */
  'paramsJson': (string);
}
