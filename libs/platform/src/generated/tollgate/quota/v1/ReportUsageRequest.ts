// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { UsageRecord as _tollgate_quota_v1_UsageRecord, UsageRecord__Output as _tollgate_quota_v1_UsageRecord__Output } from '../../../tollgate/quota/v1/UsageRecord.ts';

export interface ReportUsageRequest {
  'records'?: (_tollgate_quota_v1_UsageRecord)[];
}

export interface ReportUsageRequest__Output {
  'records': (_tollgate_quota_v1_UsageRecord__Output)[];
}
