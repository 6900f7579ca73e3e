// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface RevokeKeyRequest {
  'accountId'?: (string);
  'keyId'?: (string);
}

export interface RevokeKeyRequest__Output {
  'accountId': (string);
  'keyId': (string);
}
