// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { Resource as _tollgate_payment_v1_Resource, Resource__Output as _tollgate_payment_v1_Resource__Output } from '../../../tollgate/payment/v1/Resource.ts';
import type { Header as _tollgate_payment_v1_Header, Header__Output as _tollgate_payment_v1_Header__Output } from '../../../tollgate/payment/v1/Header.ts';

export interface VerifyRequest {
  /**
   * The gateway's id for this request, unique per request (never the client's X-Request-Id).
   */
  'requestId'?: (string);
  'resource'?: (_tollgate_payment_v1_Resource | null);
  /**
   * The payment headers exactly as received (Payment-Signature, Authorization).
   */
  'credentials'?: (_tollgate_payment_v1_Header)[];
  /**
   * The client's address as the gateway saw it (behind trusted proxies), for attempt limits.
   */
  'client'?: (string);
}

export interface VerifyRequest__Output {
  /**
   * The gateway's id for this request, unique per request (never the client's X-Request-Id).
   */
  'requestId': (string);
  'resource': (_tollgate_payment_v1_Resource__Output | null);
  /**
   * The payment headers exactly as received (Payment-Signature, Authorization).
   */
  'credentials': (_tollgate_payment_v1_Header__Output)[];
  /**
   * The client's address as the gateway saw it (behind trusted proxies), for attempt limits.
   */
  'client': (string);
}
