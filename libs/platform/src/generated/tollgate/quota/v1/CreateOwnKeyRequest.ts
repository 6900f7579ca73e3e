// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface CreateOwnKeyRequest {
  'accountId'?: (string);
}

export interface CreateOwnKeyRequest__Output {
  'accountId': (string);
}
