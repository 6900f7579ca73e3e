// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

/**
 * CreditMovement: one change to an account's credits, newest first in a list.
 */
export interface CreditMovement {
  /**
   * "top_up", "draws" (one UTC day's draws, summed), "refund" or "adjustment".
   */
  'kind'?: (string);
  /**
   * Signed atomic units: what it did to the balance.
   */
  'amount'?: (number | string | Long);
  /**
   * When it was written (RFC 3339; for draws, the day's last).
   */
  'at'?: (string);
  /**
   * Its UTC day (YYYY-MM-DD).
   */
  'day'?: (string);
  /**
   * The settlement id of a top-up, the adjustment id of an adjustment ("" for draws).
   */
  'id'?: (string);
  /**
   * Adjustments: who and why.
   */
  'operator'?: (string);
  'reason'?: (string);
  /**
   * Top-ups: what paid.
   */
  'scheme'?: (string);
  'paymentNetwork'?: (string);
  'transaction'?: (string);
  /**
   * Draws: the ledger rows (usage batches) summed.
   */
  'count'?: (number);
}

/**
 * CreditMovement: one change to an account's credits, newest first in a list.
 */
export interface CreditMovement__Output {
  /**
   * "top_up", "draws" (one UTC day's draws, summed), "refund" or "adjustment".
   */
  'kind': (string);
  /**
   * Signed atomic units: what it did to the balance.
   */
  'amount': (number);
  /**
   * When it was written (RFC 3339; for draws, the day's last).
   */
  'at': (string);
  /**
   * Its UTC day (YYYY-MM-DD).
   */
  'day': (string);
  /**
   * The settlement id of a top-up, the adjustment id of an adjustment ("" for draws).
   */
  'id': (string);
  /**
   * Adjustments: who and why.
   */
  'operator': (string);
  'reason': (string);
  /**
   * Top-ups: what paid.
   */
  'scheme': (string);
  'paymentNetwork': (string);
  'transaction': (string);
  /**
   * Draws: the ledger rows (usage batches) summed.
   */
  'count': (number);
}
