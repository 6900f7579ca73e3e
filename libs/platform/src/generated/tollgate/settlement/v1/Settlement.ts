// Original file: ../../proto/tollgate/settlement/v1/settlement_worker.proto


export interface Settlement {
  /**
   * The event id: the mesh's reservation token and the outcome.
   */
  'id'?: (string);
  'outcome'?: (string);
  'requestId'?: (string);
  'endpoint'?: (string);
  'network'?: (string);
  'scheme'?: (string);
  'payer'?: (string);
  /**
   * Atomic units of `asset`, a decimal string.
   */
  'amount'?: (string);
  'asset'?: (string);
  /**
   * Settlement chain, CAIP-2.
   */
  'paymentNetwork'?: (string);
  'transaction'?: (string);
  'channel'?: (string);
  'cumulative'?: (string);
  'reason'?: (string);
  /**
   * RFC 3339: when the outcome happened.
   */
  'time'?: (string);
}

export interface Settlement__Output {
  /**
   * The event id: the mesh's reservation token and the outcome.
   */
  'id': (string);
  'outcome': (string);
  'requestId': (string);
  'endpoint': (string);
  'network': (string);
  'scheme': (string);
  'payer': (string);
  /**
   * Atomic units of `asset`, a decimal string.
   */
  'amount': (string);
  'asset': (string);
  /**
   * Settlement chain, CAIP-2.
   */
  'paymentNetwork': (string);
  'transaction': (string);
  'channel': (string);
  'cumulative': (string);
  'reason': (string);
  /**
   * RFC 3339: when the outcome happened.
   */
  'time': (string);
}
