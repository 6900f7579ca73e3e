// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface GetOwnCreditsRequest {
  'accountId'?: (string);
  /**
   * Number of most recent UTC days to return (default 30, at most 366).
   */
  'days'?: (number);
}

export interface GetOwnCreditsRequest__Output {
  'accountId': (string);
  /**
   * Number of most recent UTC days to return (default 30, at most 366).
   */
  'days': (number);
}
