// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { Header as _tollgate_payment_v1_Header, Header__Output as _tollgate_payment_v1_Header__Output } from '../../../tollgate/payment/v1/Header.ts';

export interface ChallengeResponse {
  'headers'?: (_tollgate_payment_v1_Header)[];
}

export interface ChallengeResponse__Output {
  'headers': (_tollgate_payment_v1_Header__Output)[];
}
