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
  /**
   * The request names no call to serve (a POST without a body to a paid route that takes GET or
   * a body): only a payment that needs no service (a channel management action, e.g. an MPP
   * session close or top-up) can be verified; any other is refused with error
   * PAYMENT_ERROR_NOT_APPLICABLE without being reserved, and the gateway gives its ordinary answer.
   */
  'noService'?: (boolean);
  /**
   * What the request asks besides its URL (the SHA-256, hex, of a POST body's exact bytes as
   * received; empty without a body): a payment identifier's retry must ask the same to get the first
   * answer.
   */
  'requestDigest'?: (string);
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
  /**
   * The request names no call to serve (a POST without a body to a paid route that takes GET or
   * a body): only a payment that needs no service (a channel management action, e.g. an MPP
   * session close or top-up) can be verified; any other is refused with error
   * PAYMENT_ERROR_NOT_APPLICABLE without being reserved, and the gateway gives its ordinary answer.
   */
  'noService': (boolean);
  /**
   * What the request asks besides its URL (the SHA-256, hex, of a POST body's exact bytes as
   * received; empty without a body): a payment identifier's retry must ask the same to get the first
   * answer.
   */
  'requestDigest': (string);
}
