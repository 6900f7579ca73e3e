// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { CreditDay as _tollgate_quota_v1_CreditDay, CreditDay__Output as _tollgate_quota_v1_CreditDay__Output } from '../../../tollgate/quota/v1/CreditDay.ts';
import type { Long } from '@grpc/proto-loader';

export interface GetOwnCreditsResponse {
  /**
   * The balance (top-ups - draws + refunds), from the hot copy, else the ledger.
   */
  'balance'?: (number | string | Long);
  /**
   * Oldest first, zero days included.
   */
  'days'?: (_tollgate_quota_v1_CreditDay)[];
  'creditsOnly'?: (boolean);
}

export interface GetOwnCreditsResponse__Output {
  /**
   * The balance (top-ups - draws + refunds), from the hot copy, else the ledger.
   */
  'balance': (number);
  /**
   * Oldest first, zero days included.
   */
  'days': (_tollgate_quota_v1_CreditDay__Output)[];
  'creditsOnly': (boolean);
}
