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
  /**
   * The account was made by a credits top-up and has not signed up: credits only, no plan volume
   * until a sign-up (create) moves it to the free plan.
   */
  'signUpPending'?: (boolean);
  /**
   * This call moved the top-up's account to the free plan (a sign-up, as `created` is).
   */
  'joinedFreePlan'?: (boolean);
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
  /**
   * The account was made by a credits top-up and has not signed up: credits only, no plan volume
   * until a sign-up (create) moves it to the free plan.
   */
  'signUpPending': (boolean);
  /**
   * This call moved the top-up's account to the free plan (a sign-up, as `created` is).
   */
  'joinedFreePlan': (boolean);
}
