// Original file: ../../proto/tollgate/settlement/v1/settlement_worker.proto

import type { Settlement as _tollgate_settlement_v1_Settlement, Settlement__Output as _tollgate_settlement_v1_Settlement__Output } from '../../../tollgate/settlement/v1/Settlement.ts';

export interface ListOwnPaymentsResponse {
  'settlements'?: (_tollgate_settlement_v1_Settlement)[];
  /**
   * Empty when this is the last page.
   */
  'nextCursor'?: (string);
}

export interface ListOwnPaymentsResponse__Output {
  'settlements': (_tollgate_settlement_v1_Settlement__Output)[];
  /**
   * Empty when this is the last page.
   */
  'nextCursor': (string);
}
