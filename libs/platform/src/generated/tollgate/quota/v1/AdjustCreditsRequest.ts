// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

export interface AdjustCreditsRequest {
  'accountId'?: (string);
  /**
   * Signed atomic units: positive grants credits, negative takes them back (never below zero).
   */
  'amount'?: (number | string | Long);
  /**
   * Why (kept in the ledger): 1 to 500 characters.
   */
  'reason'?: (string);
  /**
   * Who: the operator's name as the CLI sends it (the operator token names no one).
   */
  'operator'?: (string);
  /**
   * The adjustment's id, made by the operator's client ("adj_" and 32 hex digits): an adjustment
   * sent again with the same id is applied once.
   */
  'adjustmentId'?: (string);
}

export interface AdjustCreditsRequest__Output {
  'accountId': (string);
  /**
   * Signed atomic units: positive grants credits, negative takes them back (never below zero).
   */
  'amount': (number);
  /**
   * Why (kept in the ledger): 1 to 500 characters.
   */
  'reason': (string);
  /**
   * Who: the operator's name as the CLI sends it (the operator token names no one).
   */
  'operator': (string);
  /**
   * The adjustment's id, made by the operator's client ("adj_" and 32 hex digits): an adjustment
   * sent again with the same id is applied once.
   */
  'adjustmentId': (string);
}
