// Original file: ../../proto/tollgate/settlement/v1/settlement_worker.proto

import type { Long } from '@grpc/proto-loader';

export interface OutcomeTotal {
  'outcome'?: (string);
  'asset'?: (string);
  'count'?: (number | string | Long);
  /**
   * Sum of the amounts, atomic units, a decimal string.
   */
  'amount'?: (string);
}

export interface OutcomeTotal__Output {
  'outcome': (string);
  'asset': (string);
  'count': (number);
  /**
   * Sum of the amounts, atomic units, a decimal string.
   */
  'amount': (string);
}
