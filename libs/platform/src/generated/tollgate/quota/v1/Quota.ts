// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Quota holds the X-Quota-* values. A window's pair is unset when it is uncapped.
 */
export interface Quota {
  'dayLimit'?: (number | string | Long);
  'dayUsed'?: (number | string | Long);
  'monthLimit'?: (number | string | Long);
  'monthUsed'?: (number | string | Long);
  '_dayLimit'?: "dayLimit";
  '_dayUsed'?: "dayUsed";
  '_monthLimit'?: "monthLimit";
  '_monthUsed'?: "monthUsed";
}

/**
 * Quota holds the X-Quota-* values. A window's pair is unset when it is uncapped.
 */
export interface Quota__Output {
  'dayLimit'?: (number);
  'dayUsed'?: (number);
  'monthLimit'?: (number);
  'monthUsed'?: (number);
  '_dayLimit'?: "dayLimit";
  '_dayUsed'?: "dayUsed";
  '_monthLimit'?: "monthLimit";
  '_monthUsed'?: "monthUsed";
}
