// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface ResolveWalletAccountRequest {
  /**
   * The EIP-55 or lower-case 0x address whose signature the caller verified.
   */
  'address'?: (string);
  /**
   * A sign-up (the caller applied its sign-up policy): create the account on the free plan when the
   * address has none, or move the credits-only account a top-up made to the free plan.
   */
  'create'?: (boolean);
}

export interface ResolveWalletAccountRequest__Output {
  /**
   * The EIP-55 or lower-case 0x address whose signature the caller verified.
   */
  'address': (string);
  /**
   * A sign-up (the caller applied its sign-up policy): create the account on the free plan when the
   * address has none, or move the credits-only account a top-up made to the free plan.
   */
  'create': (boolean);
}
