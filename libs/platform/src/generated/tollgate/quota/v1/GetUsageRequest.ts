// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface GetUsageRequest {
  'apiKey'?: (string);
  /**
   * Number of most recent UTC days to return (default 30).
   */
  'days'?: (number);
}

export interface GetUsageRequest__Output {
  'apiKey': (string);
  /**
   * Number of most recent UTC days to return (default 30).
   */
  'days': (number);
}
