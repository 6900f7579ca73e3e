// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { Header as _tollgate_payment_v1_Header, Header__Output as _tollgate_payment_v1_Header__Output } from '../../../tollgate/payment/v1/Header.ts';
import type { Problem as _tollgate_payment_v1_Problem, Problem__Output as _tollgate_payment_v1_Problem__Output } from '../../../tollgate/payment/v1/Problem.ts';

export interface ChallengeResponse {
  'headers'?: (_tollgate_payment_v1_Header)[];
  /**
   * The problem the answer's body also states, when a protocol defines one (MPP:
   * https://paymentauth.org/problems/payment-required); unset for x402 alone.
   */
  'problem'?: (_tollgate_payment_v1_Problem | null);
}

export interface ChallengeResponse__Output {
  'headers': (_tollgate_payment_v1_Header__Output)[];
  /**
   * The problem the answer's body also states, when a protocol defines one (MPP:
   * https://paymentauth.org/problems/payment-required); unset for x402 alone.
   */
  'problem': (_tollgate_payment_v1_Problem__Output | null);
}
