// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

/**
 * CreditDraw: a call paid from the account's credits.
 */
export interface CreditDraw {
  /**
   * Atomic units drawn: this call's price, or the whole block of a credit lease.
   */
  'drawn'?: (number | string | Long);
  /**
   * The balance after the draw.
   */
  'remaining'?: (number | string | Long);
  /**
   * The hot copy's generation the draw was made in; the usage record carries it back so a draw
   * the hot copy lost (Redis emptied and rebuilt) is applied to the rebuilt copy once.
   */
  'epoch'?: (string);
}

/**
 * CreditDraw: a call paid from the account's credits.
 */
export interface CreditDraw__Output {
  /**
   * Atomic units drawn: this call's price, or the whole block of a credit lease.
   */
  'drawn': (number);
  /**
   * The balance after the draw.
   */
  'remaining': (number);
  /**
   * The hot copy's generation the draw was made in; the usage record carries it back so a draw
   * the hot copy lost (Redis emptied and rebuilt) is applied to the rebuilt copy once.
   */
  'epoch': (string);
}
