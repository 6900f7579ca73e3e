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
  /**
   * When a call with the key last reached the usage rollups; empty if never.
   */
  'lastUsedAt'?: (string);
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
  /**
   * When a call with the key last reached the usage rollups; empty if never.
   */
  'lastUsedAt': (string);
}
