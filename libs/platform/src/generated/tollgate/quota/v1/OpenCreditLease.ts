// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

export interface OpenCreditLease {
  'id'?: (string);
  /**
   * Atomic units drawn into the lease, and how much of it answered calls used so far.
   */
  'amount'?: (number | string | Long);
  'used'?: (number | string | Long);
}

export interface OpenCreditLease__Output {
  'id': (string);
  /**
   * Atomic units drawn into the lease, and how much of it answered calls used so far.
   */
  'amount': (number);
  'used': (number);
}
