// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { Resource as _tollgate_payment_v1_Resource, Resource__Output as _tollgate_payment_v1_Resource__Output } from '../../../tollgate/payment/v1/Resource.ts';

export interface ChallengeRequest {
  'requestId'?: (string);
  'resource'?: (_tollgate_payment_v1_Resource | null);
  /**
   * Why a payment is asked for again, for example "payment_expired"; empty at first.
   */
  'error'?: (string);
}

export interface ChallengeRequest__Output {
  'requestId': (string);
  'resource': (_tollgate_payment_v1_Resource__Output | null);
  /**
   * Why a payment is asked for again, for example "payment_expired"; empty at first.
   */
  'error': (string);
}
