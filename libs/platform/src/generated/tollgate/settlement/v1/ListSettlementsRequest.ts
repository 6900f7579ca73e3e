// Original file: ../../proto/tollgate/settlement/v1/settlement_worker.proto


export interface ListSettlementsRequest {
  /**
   * A payer address (any letter case).
   */
  'payer'?: (string);
  /**
   * A UTC day, YYYY-MM-DD.
   */
  'day'?: (string);
  /**
   * A payment channel id.
   */
  'channel'?: (string);
  /**
   * Only this outcome ("settled", "accrued", ...); empty for every outcome.
   */
  'outcome'?: (string);
  /**
   * At most this many entries (default 100, at most 1000).
   */
  'limit'?: (number);
  /**
   * The `next_cursor` of the previous page; empty for the first.
   */
  'cursor'?: (string);
}

export interface ListSettlementsRequest__Output {
  /**
   * A payer address (any letter case).
   */
  'payer': (string);
  /**
   * A UTC day, YYYY-MM-DD.
   */
  'day': (string);
  /**
   * A payment channel id.
   */
  'channel': (string);
  /**
   * Only this outcome ("settled", "accrued", ...); empty for every outcome.
   */
  'outcome': (string);
  /**
   * At most this many entries (default 100, at most 1000).
   */
  'limit': (number);
  /**
   * The `next_cursor` of the previous page; empty for the first.
   */
  'cursor': (string);
}
