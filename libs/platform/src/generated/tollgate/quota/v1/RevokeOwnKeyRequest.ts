// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface RevokeOwnKeyRequest {
  'accountId'?: (string);
  'keyId'?: (string);
}

export interface RevokeOwnKeyRequest__Output {
  'accountId': (string);
  'keyId': (string);
}
