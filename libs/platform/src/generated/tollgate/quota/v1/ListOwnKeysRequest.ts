// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface ListOwnKeysRequest {
  'accountId'?: (string);
}

export interface ListOwnKeysRequest__Output {
  'accountId': (string);
}
