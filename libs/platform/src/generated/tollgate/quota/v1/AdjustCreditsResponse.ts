// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { CreditMovement as _tollgate_quota_v1_CreditMovement, CreditMovement__Output as _tollgate_quota_v1_CreditMovement__Output } from '../../../tollgate/quota/v1/CreditMovement.ts';
import type { Long } from '@grpc/proto-loader';

export interface AdjustCreditsResponse {
  /**
   * The adjustment as the ledger holds it (the first one's, on a retry).
   */
  'adjustment'?: (_tollgate_quota_v1_CreditMovement | null);
  /**
   * The balance after it, as GetAccount shows it.
   */
  'balance'?: (number | string | Long);
  /**
   * False when this id was applied before: nothing was applied again.
   */
  'applied'?: (boolean);
}

export interface AdjustCreditsResponse__Output {
  /**
   * The adjustment as the ledger holds it (the first one's, on a retry).
   */
  'adjustment': (_tollgate_quota_v1_CreditMovement__Output | null);
  /**
   * The balance after it, as GetAccount shows it.
   */
  'balance': (number);
  /**
   * False when this id was applied before: nothing was applied again.
   */
  'applied': (boolean);
}
