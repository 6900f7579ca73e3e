// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto


/**
 * PaymentMethod is one way to pay per call.
 */
export interface PaymentMethod {
  /**
   * "x402" or "mpp".
   */
  'protocol'?: (string);
  /**
   * "exact", "x402-batch", or the MPP intent "charge" or "session".
   */
  'scheme'?: (string);
  /**
   * Settlement chain, CAIP-2 (for example "eip155:8453").
   */
  'network'?: (string);
  /**
   * Token contract address.
   */
  'asset'?: (string);
  /**
   * Token symbol, for example "USDC".
   */
  'symbol'?: (string);
  'decimals'?: (number);
  'payTo'?: (string);
  /**
   * The protocol's payment method, for MPP "tempo"; empty for x402.
   */
  'method'?: (string);
}

/**
 * PaymentMethod is one way to pay per call.
 */
export interface PaymentMethod__Output {
  /**
   * "x402" or "mpp".
   */
  'protocol': (string);
  /**
   * "exact", "x402-batch", or the MPP intent "charge" or "session".
   */
  'scheme': (string);
  /**
   * Settlement chain, CAIP-2 (for example "eip155:8453").
   */
  'network': (string);
  /**
   * Token contract address.
   */
  'asset': (string);
  /**
   * Token symbol, for example "USDC".
   */
  'symbol': (string);
  'decimals': (number);
  'payTo': (string);
  /**
   * The protocol's payment method, for MPP "tempo"; empty for x402.
   */
  'method': (string);
}
