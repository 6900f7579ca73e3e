// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

export interface DailyUsage {
  /**
   * UTC day, YYYY-MM-DD.
   */
  'day'?: (string);
  'requests'?: (number | string | Long);
  'errors'?: (number | string | Long);
}

export interface DailyUsage__Output {
  /**
   * UTC day, YYYY-MM-DD.
   */
  'day': (string);
  'requests': (number);
  'errors': (number);
}
