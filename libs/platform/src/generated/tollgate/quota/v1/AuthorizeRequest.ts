// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface AuthorizeRequest {
  'requestId'?: (string);
  /**
   * The bearer token exactly as presented. Never logged or stored.
   */
  'apiKey'?: (string);
  'endpoint'?: (string);
  'network'?: (string);
}

export interface AuthorizeRequest__Output {
  'requestId': (string);
  /**
   * The bearer token exactly as presented. Never logged or stored.
   */
  'apiKey': (string);
  'endpoint': (string);
  'network': (string);
}
