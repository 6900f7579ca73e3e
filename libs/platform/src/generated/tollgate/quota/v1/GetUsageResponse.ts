// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { DailyUsage as _tollgate_quota_v1_DailyUsage, DailyUsage__Output as _tollgate_quota_v1_DailyUsage__Output } from '../../../tollgate/quota/v1/DailyUsage.ts';
import type { Quota as _tollgate_quota_v1_Quota, Quota__Output as _tollgate_quota_v1_Quota__Output } from '../../../tollgate/quota/v1/Quota.ts';

export interface GetUsageResponse {
  'accountId'?: (string);
  'days'?: (_tollgate_quota_v1_DailyUsage)[];
  'quota'?: (_tollgate_quota_v1_Quota | null);
}

export interface GetUsageResponse__Output {
  'accountId': (string);
  'days': (_tollgate_quota_v1_DailyUsage__Output)[];
  'quota': (_tollgate_quota_v1_Quota__Output | null);
}
