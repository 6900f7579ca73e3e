// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { Resource as _tollgate_payment_v1_Resource, Resource__Output as _tollgate_payment_v1_Resource__Output } from '../../../tollgate/payment/v1/Resource.ts';
import type { Header as _tollgate_payment_v1_Header, Header__Output as _tollgate_payment_v1_Header__Output } from '../../../tollgate/payment/v1/Header.ts';

export interface ReleaseRequest {
  'requestId'?: (string);
  'paymentId'?: (string);
  /**
   * Why the call failed, for the settlement event ("upstream_unavailable", ...).
   */
  'reason'?: (string);
  /**
   * The call and the credentials Verify saw, so a channel scheme can undo its hold.
   */
  'resource'?: (_tollgate_payment_v1_Resource | null);
  'credentials'?: (_tollgate_payment_v1_Header)[];
}

export interface ReleaseRequest__Output {
  'requestId': (string);
  'paymentId': (string);
  /**
   * Why the call failed, for the settlement event ("upstream_unavailable", ...).
   */
  'reason': (string);
  /**
   * The call and the credentials Verify saw, so a channel scheme can undo its hold.
   */
  'resource': (_tollgate_payment_v1_Resource__Output | null);
  'credentials': (_tollgate_payment_v1_Header__Output)[];
}
