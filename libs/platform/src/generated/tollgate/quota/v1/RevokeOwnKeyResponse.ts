// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { ApiKey as _tollgate_quota_v1_ApiKey, ApiKey__Output as _tollgate_quota_v1_ApiKey__Output } from '../../../tollgate/quota/v1/ApiKey.ts';

export interface RevokeOwnKeyResponse {
  'key'?: (_tollgate_quota_v1_ApiKey | null);
}

export interface RevokeOwnKeyResponse__Output {
  'key': (_tollgate_quota_v1_ApiKey__Output | null);
}
