// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Plan as _tollgate_quota_v1_Plan, Plan__Output as _tollgate_quota_v1_Plan__Output } from '../../../tollgate/quota/v1/Plan.ts';

export interface DescribePlansResponse {
  /**
   * What the operator's CLI gives (`account create`, `quickstart`) unless it names other figures.
   */
  'standard'?: (_tollgate_quota_v1_Plan | null);
  /**
   * What a first dashboard sign-in gives (self-serve sign-up; FREE_* on quota-meter).
   */
  'free'?: (_tollgate_quota_v1_Plan | null);
}

export interface DescribePlansResponse__Output {
  /**
   * What the operator's CLI gives (`account create`, `quickstart`) unless it names other figures.
   */
  'standard': (_tollgate_quota_v1_Plan__Output | null);
  /**
   * What a first dashboard sign-in gives (self-serve sign-up; FREE_* on quota-meter).
   */
  'free': (_tollgate_quota_v1_Plan__Output | null);
}
