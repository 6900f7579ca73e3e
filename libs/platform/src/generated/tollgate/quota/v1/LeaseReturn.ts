// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

/**
 * LeaseReturn gives the unused units of a lease back to the windows it was counted in, or the
 * unused credits of a credit lease back to the balance.
 */
export interface LeaseReturn {
  'leaseId'?: (string);
  'accountId'?: (string);
  'units'?: (number);
  'dayWindow'?: (string);
  'monthWindow'?: (string);
  /**
   * A credit lease's unused credits (atomic units); units is 0 then.
   */
  'creditsLeft'?: (number | string | Long);
}

/**
 * LeaseReturn gives the unused units of a lease back to the windows it was counted in, or the
 * unused credits of a credit lease back to the balance.
 */
export interface LeaseReturn__Output {
  'leaseId': (string);
  'accountId': (string);
  'units': (number);
  'dayWindow': (string);
  'monthWindow': (string);
  /**
   * A credit lease's unused credits (atomic units); units is 0 then.
   */
  'creditsLeft': (number);
}
