// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Account as _tollgate_quota_v1_Account, Account__Output as _tollgate_quota_v1_Account__Output } from '../../../tollgate/quota/v1/Account.ts';
import type { AccountCredits as _tollgate_quota_v1_AccountCredits, AccountCredits__Output as _tollgate_quota_v1_AccountCredits__Output } from '../../../tollgate/quota/v1/AccountCredits.ts';

export interface GetAccountResponse {
  'account'?: (_tollgate_quota_v1_Account | null);
  /**
   * The account's credits: its balance and the credit leases open on it.
   */
  'credits'?: (_tollgate_quota_v1_AccountCredits | null);
}

export interface GetAccountResponse__Output {
  'account': (_tollgate_quota_v1_Account__Output | null);
  /**
   * The account's credits: its balance and the credit leases open on it.
   */
  'credits': (_tollgate_quota_v1_AccountCredits__Output | null);
}
