// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface ResolveWalletAccountRequest {
  /**
   * The EIP-55 or lower-case 0x address whose signature the caller verified.
   */
  'address'?: (string);
  /**
   * Create the account when the address has none (sign-up open).
   */
  'create'?: (boolean);
}

export interface ResolveWalletAccountRequest__Output {
  /**
   * The EIP-55 or lower-case 0x address whose signature the caller verified.
   */
  'address': (string);
  /**
   * Create the account when the address has none (sign-up open).
   */
  'create': (boolean);
}
