// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto


/**
 * Resource is the paid thing: one endpoint of the catalog on one network.
 */
export interface Resource {
  /**
   * Catalog path template, for example "/api/chain/block/{number}".
   */
  'endpoint'?: (string);
  'network'?: (string);
  /**
   * The absolute URL the client called.
   */
  'url'?: (string);
}

/**
 * Resource is the paid thing: one endpoint of the catalog on one network.
 */
export interface Resource__Output {
  /**
   * Catalog path template, for example "/api/chain/block/{number}".
   */
  'endpoint': (string);
  'network': (string);
  /**
   * The absolute URL the client called.
   */
  'url': (string);
}
