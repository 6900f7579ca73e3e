// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface ReplaceOwnKeyRequest {
  'accountId'?: (string);
  /**
   * The key to revoke once its replacement exists.
   */
  'keyId'?: (string);
}

export interface ReplaceOwnKeyRequest__Output {
  'accountId': (string);
  /**
   * The key to revoke once its replacement exists.
   */
  'keyId': (string);
}
