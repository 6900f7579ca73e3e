// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto


export interface AuthorizeRequest {
  'requestId'?: (string);
  /**
   * The bearer token exactly as presented. Never logged or stored.
   */
  'apiKey'?: (string);
  'endpoint'?: (string);
  'network'?: (string);
  /**
   * Units wanted: 0 or 1 for this call only; more for a lease the gateway serves the key's
   * next calls from without asking again (quota-meter grants at most what the windows and the
   * burst guard have left, and caps it).
   */
  'leaseUnits'?: (number);
}

export interface AuthorizeRequest__Output {
  'requestId': (string);
  /**
   * The bearer token exactly as presented. Never logged or stored.
   */
  'apiKey': (string);
  'endpoint': (string);
  'network': (string);
  /**
   * Units wanted: 0 or 1 for this call only; more for a lease the gateway serves the key's
   * next calls from without asking again (quota-meter grants at most what the windows and the
   * burst guard have left, and caps it).
   */
  'leaseUnits': (number);
}
