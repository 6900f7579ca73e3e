// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Account as _tollgate_quota_v1_Account, Account__Output as _tollgate_quota_v1_Account__Output } from '../../../tollgate/quota/v1/Account.ts';

export interface ResolveWalletAccountResponse {
  'account'?: (_tollgate_quota_v1_Account | null);
  /**
   * The account was created by this call.
   */
  'created'?: (boolean);
  /**
   * The address as bound (lower case).
   */
  'address'?: (string);
}

export interface ResolveWalletAccountResponse__Output {
  'account': (_tollgate_quota_v1_Account__Output | null);
  /**
   * The account was created by this call.
   */
  'created': (boolean);
  /**
   * The address as bound (lower case).
   */
  'address': (string);
}
