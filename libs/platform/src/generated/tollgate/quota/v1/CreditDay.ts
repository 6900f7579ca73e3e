// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

/**
 * CreditDay: an account's credit ledger over one UTC day, atomic units.
 */
export interface CreditDay {
  'day'?: (string);
  'topUps'?: (number | string | Long);
  'draws'?: (number | string | Long);
  'refunds'?: (number | string | Long);
}

/**
 * CreditDay: an account's credit ledger over one UTC day, atomic units.
 */
export interface CreditDay__Output {
  'day': (string);
  'topUps': (number);
  'draws': (number);
  'refunds': (number);
}
