// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface ListKeysRequest {
  'accountId'?: (string);
}

export interface ListKeysRequest__Output {
  'accountId': (string);
}
