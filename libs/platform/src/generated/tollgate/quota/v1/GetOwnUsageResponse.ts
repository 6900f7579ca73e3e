// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Account as _tollgate_quota_v1_Account, Account__Output as _tollgate_quota_v1_Account__Output } from '../../../tollgate/quota/v1/Account.ts';
import type { Quota as _tollgate_quota_v1_Quota, Quota__Output as _tollgate_quota_v1_Quota__Output } from '../../../tollgate/quota/v1/Quota.ts';
import type { DailyUsage as _tollgate_quota_v1_DailyUsage, DailyUsage__Output as _tollgate_quota_v1_DailyUsage__Output } from '../../../tollgate/quota/v1/DailyUsage.ts';

export interface GetOwnUsageResponse {
  /**
   * The account and its plan figures as quota-meter enforces them.
   */
  'account'?: (_tollgate_quota_v1_Account | null);
  /**
   * Today's and this month's windows (unset when the window store is unreachable).
   */
  'quota'?: (_tollgate_quota_v1_Quota | null);
  /**
   * The UTC windows the quota is for ("2026-11-21", "2026-11").
   */
  'dayWindow'?: (string);
  'monthWindow'?: (string);
  /**
   * Oldest first, zero days included, from the usage rollups in PostgreSQL.
   */
  'days'?: (_tollgate_quota_v1_DailyUsage)[];
  /**
   * The burst guard applied (the account's own rate, or the service default; 0 = none).
   */
  'burstPerSecond'?: (number);
}

export interface GetOwnUsageResponse__Output {
  /**
   * The account and its plan figures as quota-meter enforces them.
   */
  'account': (_tollgate_quota_v1_Account__Output | null);
  /**
   * Today's and this month's windows (unset when the window store is unreachable).
   */
  'quota': (_tollgate_quota_v1_Quota__Output | null);
  /**
   * The UTC windows the quota is for ("2026-11-21", "2026-11").
   */
  'dayWindow': (string);
  'monthWindow': (string);
  /**
   * Oldest first, zero days included, from the usage rollups in PostgreSQL.
   */
  'days': (_tollgate_quota_v1_DailyUsage__Output)[];
  /**
   * The burst guard applied (the account's own rate, or the service default; 0 = none).
   */
  'burstPerSecond': (number);
}
