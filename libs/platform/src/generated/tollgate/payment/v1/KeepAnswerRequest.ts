// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { Resource as _tollgate_payment_v1_Resource, Resource__Output as _tollgate_payment_v1_Resource__Output } from '../../../tollgate/payment/v1/Resource.ts';
import type { Header as _tollgate_payment_v1_Header, Header__Output as _tollgate_payment_v1_Header__Output } from '../../../tollgate/payment/v1/Header.ts';
import type { Answer as _tollgate_payment_v1_Answer, Answer__Output as _tollgate_payment_v1_Answer__Output } from '../../../tollgate/payment/v1/Answer.ts';

export interface KeepAnswerRequest {
  'requestId'?: (string);
  'paymentId'?: (string);
  'resource'?: (_tollgate_payment_v1_Resource | null);
  'credentials'?: (_tollgate_payment_v1_Header)[];
  /**
   * The answer sent; without its body when that was over answer_max_bytes (too_large).
   */
  'answer'?: (_tollgate_payment_v1_Answer | null);
  /**
   * The body was over answer_max_bytes: nothing is kept, a retry is answered as a used payment.
   */
  'tooLarge'?: (boolean);
}

export interface KeepAnswerRequest__Output {
  'requestId': (string);
  'paymentId': (string);
  'resource': (_tollgate_payment_v1_Resource__Output | null);
  'credentials': (_tollgate_payment_v1_Header__Output)[];
  /**
   * The answer sent; without its body when that was over answer_max_bytes (too_large).
   */
  'answer': (_tollgate_payment_v1_Answer__Output | null);
  /**
   * The body was over answer_max_bytes: nothing is kept, a retry is answered as a used payment.
   */
  'tooLarge': (boolean);
}
