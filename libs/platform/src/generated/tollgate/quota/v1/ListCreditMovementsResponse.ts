// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { CreditMovement as _tollgate_quota_v1_CreditMovement, CreditMovement__Output as _tollgate_quota_v1_CreditMovement__Output } from '../../../tollgate/quota/v1/CreditMovement.ts';
import type { Long } from '@grpc/proto-loader';

export interface ListCreditMovementsResponse {
  'movements'?: (_tollgate_quota_v1_CreditMovement)[];
  /**
   * The balance the ledger holds now (all days).
   */
  'ledgerBalance'?: (number | string | Long);
}

export interface ListCreditMovementsResponse__Output {
  'movements': (_tollgate_quota_v1_CreditMovement__Output)[];
  /**
   * The balance the ledger holds now (all days).
   */
  'ledgerBalance': (number);
}
