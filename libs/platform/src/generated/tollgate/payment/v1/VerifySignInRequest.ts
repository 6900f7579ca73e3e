// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { Resource as _tollgate_payment_v1_Resource, Resource__Output as _tollgate_payment_v1_Resource__Output } from '../../../tollgate/payment/v1/Resource.ts';

export interface VerifySignInRequest {
  /**
   * The gateway's id for this request (never the client's X-Request-Id). A VerifySignIn sent again
   * for the same request_id and proof (its answer was lost) is answered valid again, not a replay.
   */
  'requestId'?: (string);
  /**
   * The call. `url` is under the gateway's PUBLIC_BASE_URL (never the caller's Host): its origin
   * is the one a proof must name (domain = its host, uri of the same origin). A relative url (no
   * public origin configured) refuses every proof.
   */
  'resource'?: (_tollgate_payment_v1_Resource | null);
  /**
   * The SIGN-IN-WITH-X header as received (base64 of the JSON proof).
   */
  'proof'?: (string);
  /**
   * The client's address as the gateway saw it (behind trusted proxies), for attempt limits.
   */
  'client'?: (string);
}

export interface VerifySignInRequest__Output {
  /**
   * The gateway's id for this request (never the client's X-Request-Id). A VerifySignIn sent again
   * for the same request_id and proof (its answer was lost) is answered valid again, not a replay.
   */
  'requestId': (string);
  /**
   * The call. `url` is under the gateway's PUBLIC_BASE_URL (never the caller's Host): its origin
   * is the one a proof must name (domain = its host, uri of the same origin). A relative url (no
   * public origin configured) refuses every proof.
   */
  'resource': (_tollgate_payment_v1_Resource__Output | null);
  /**
   * The SIGN-IN-WITH-X header as received (base64 of the JSON proof).
   */
  'proof': (string);
  /**
   * The client's address as the gateway saw it (behind trusted proxies), for attempt limits.
   */
  'client': (string);
}
