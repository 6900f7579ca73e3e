// Original file: ../../proto/tollgate/settlement/v1/settlement_worker.proto

import type { Long } from '@grpc/proto-loader';

export interface ReconcileRequest {
  'fromBlock'?: (number | string | Long);
  /**
   * Inclusive; at most 100,000 blocks after from_block.
   */
  'toBlock'?: (number | string | Long);
}

export interface ReconcileRequest__Output {
  'fromBlock': (number);
  /**
   * Inclusive; at most 100,000 blocks after from_block.
   */
  'toBlock': (number);
}
