// Original file: ../../proto/tollgate/settlement/v1/settlement_worker.proto


export interface ListOwnPaymentsRequest {
  /**
   * The payer's address (any letter case); required.
   */
  'payer'?: (string);
  /**
   * At most this many entries (default 50, at most 200).
   */
  'limit'?: (number);
  /**
   * The `next_cursor` of the previous page; empty for the first.
   */
  'cursor'?: (string);
}

export interface ListOwnPaymentsRequest__Output {
  /**
   * The payer's address (any letter case); required.
   */
  'payer': (string);
  /**
   * At most this many entries (default 50, at most 200).
   */
  'limit': (number);
  /**
   * The `next_cursor` of the previous page; empty for the first.
   */
  'cursor': (string);
}
