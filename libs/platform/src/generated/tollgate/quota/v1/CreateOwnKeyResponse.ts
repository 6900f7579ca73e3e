// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { ApiKey as _tollgate_quota_v1_ApiKey, ApiKey__Output as _tollgate_quota_v1_ApiKey__Output } from '../../../tollgate/quota/v1/ApiKey.ts';

export interface CreateOwnKeyResponse {
  'key'?: (_tollgate_quota_v1_ApiKey | null);
  /**
   * The key itself: returned once, never stored, never shown again.
   */
  'secret'?: (string);
}

export interface CreateOwnKeyResponse__Output {
  'key': (_tollgate_quota_v1_ApiKey__Output | null);
  /**
   * The key itself: returned once, never stored, never shown again.
   */
  'secret': (string);
}
