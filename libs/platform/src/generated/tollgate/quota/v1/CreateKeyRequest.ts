// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface CreateKeyRequest {
  'accountId'?: (string);
}

export interface CreateKeyRequest__Output {
  'accountId': (string);
}
