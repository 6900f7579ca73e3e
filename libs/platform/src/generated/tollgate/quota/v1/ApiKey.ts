// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface ApiKey {
  'id'?: (string);
  'accountId'?: (string);
  /**
   * The first characters of the key, enough to recognise it, never enough to use it.
   */
  'prefix'?: (string);
  'createdAt'?: (string);
  'revokedAt'?: (string);
}

export interface ApiKey__Output {
  'id': (string);
  'accountId': (string);
  /**
   * The first characters of the key, enough to recognise it, never enough to use it.
   */
  'prefix': (string);
  'createdAt': (string);
  'revokedAt': (string);
}
