// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


/**
 * LeaseReturn gives the unused units of a lease back to the windows it was counted in.
 */
export interface LeaseReturn {
  'leaseId'?: (string);
  'accountId'?: (string);
  'units'?: (number);
  'dayWindow'?: (string);
  'monthWindow'?: (string);
}

/**
 * LeaseReturn gives the unused units of a lease back to the windows it was counted in.
 */
export interface LeaseReturn__Output {
  'leaseId': (string);
  'accountId': (string);
  'units': (number);
  'dayWindow': (string);
  'monthWindow': (string);
}
