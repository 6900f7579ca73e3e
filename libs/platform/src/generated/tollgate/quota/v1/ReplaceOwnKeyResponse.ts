// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { ApiKey as _tollgate_quota_v1_ApiKey, ApiKey__Output as _tollgate_quota_v1_ApiKey__Output } from '../../../tollgate/quota/v1/ApiKey.ts';

export interface ReplaceOwnKeyResponse {
  /**
   * The new key and its secret (returned once).
   */
  'key'?: (_tollgate_quota_v1_ApiKey | null);
  'secret'?: (string);
  /**
   * The old key, revoked.
   */
  'revoked'?: (_tollgate_quota_v1_ApiKey | null);
}

export interface ReplaceOwnKeyResponse__Output {
  /**
   * The new key and its secret (returned once).
   */
  'key': (_tollgate_quota_v1_ApiKey__Output | null);
  'secret': (string);
  /**
   * The old key, revoked.
   */
  'revoked': (_tollgate_quota_v1_ApiKey__Output | null);
}
