// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Account as _tollgate_quota_v1_Account, Account__Output as _tollgate_quota_v1_Account__Output } from '../../../tollgate/quota/v1/Account.ts';

export interface GetAccountResponse {
  'account'?: (_tollgate_quota_v1_Account | null);
}

export interface GetAccountResponse__Output {
  'account': (_tollgate_quota_v1_Account__Output | null);
}
