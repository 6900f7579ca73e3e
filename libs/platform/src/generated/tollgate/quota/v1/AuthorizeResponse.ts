// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Decision as _tollgate_quota_v1_Decision, Decision__Output as _tollgate_quota_v1_Decision__Output } from '../../../tollgate/quota/v1/Decision.ts';
import type { Quota as _tollgate_quota_v1_Quota, Quota__Output as _tollgate_quota_v1_Quota__Output } from '../../../tollgate/quota/v1/Quota.ts';
import type { Lease as _tollgate_quota_v1_Lease, Lease__Output as _tollgate_quota_v1_Lease__Output } from '../../../tollgate/quota/v1/Lease.ts';
import type { CreditDraw as _tollgate_quota_v1_CreditDraw, CreditDraw__Output as _tollgate_quota_v1_CreditDraw__Output } from '../../../tollgate/quota/v1/CreditDraw.ts';

export interface AuthorizeResponse {
  'decision'?: (_tollgate_quota_v1_Decision);
  'accountId'?: (string);
  'keyId'?: (string);
  /**
   * Unset when the store was unreachable (served without quota headers).
   */
  'quota'?: (_tollgate_quota_v1_Quota | null);
  /**
   * True when the call was counted; only counted calls are reported back.
   */
  'metered'?: (boolean);
  /**
   * The windows the call was counted in ("2026-11-21", "2026-11"), so a refund
   * lands in the same windows even across midnight.
   */
  'dayWindow'?: (string);
  'monthWindow'?: (string);
  /**
   * Set when the call was counted: the units granted, this call's included. `quota` shows
   * this call's values; unit k of the lease (k = 1 for this call; a batch of `calls` calls
   * takes units 1 to `calls`) is "used" + k - 1.
   */
  'lease'?: (_tollgate_quota_v1_Lease | null);
  /**
   * Set when the call drew credits instead of a plan unit. With `lease`, a block of credits was
   * drawn (lease.units calls at this call's price, this one's included): the gateway serves the
   * key's next calls from it, each taking its own price, and returns the rest (credits_left).
   */
  'credits'?: (_tollgate_quota_v1_CreditDraw | null);
}

export interface AuthorizeResponse__Output {
  'decision': (_tollgate_quota_v1_Decision__Output);
  'accountId': (string);
  'keyId': (string);
  /**
   * Unset when the store was unreachable (served without quota headers).
   */
  'quota': (_tollgate_quota_v1_Quota__Output | null);
  /**
   * True when the call was counted; only counted calls are reported back.
   */
  'metered': (boolean);
  /**
   * The windows the call was counted in ("2026-11-21", "2026-11"), so a refund
   * lands in the same windows even across midnight.
   */
  'dayWindow': (string);
  'monthWindow': (string);
  /**
   * Set when the call was counted: the units granted, this call's included. `quota` shows
   * this call's values; unit k of the lease (k = 1 for this call; a batch of `calls` calls
   * takes units 1 to `calls`) is "used" + k - 1.
   */
  'lease': (_tollgate_quota_v1_Lease__Output | null);
  /**
   * Set when the call drew credits instead of a plan unit. With `lease`, a block of credits was
   * drawn (lease.units calls at this call's price, this one's included): the gateway serves the
   * key's next calls from it, each taking its own price, and returns the rest (credits_left).
   */
  'credits': (_tollgate_quota_v1_CreditDraw__Output | null);
}
