// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface ListCreditMovementsRequest {
  'accountId'?: (string);
  /**
   * Number of most recent UTC days to list (default 30, at most 366).
   */
  'days'?: (number);
}

export interface ListCreditMovementsRequest__Output {
  'accountId': (string);
  /**
   * Number of most recent UTC days to list (default 30, at most 366).
   */
  'days': (number);
}
