// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface GetAccountRequest {
  'accountId'?: (string);
}

export interface GetAccountRequest__Output {
  'accountId': (string);
}
