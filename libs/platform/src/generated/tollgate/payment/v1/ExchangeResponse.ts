// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { ChallengeResponse as _tollgate_payment_v1_ChallengeResponse, ChallengeResponse__Output as _tollgate_payment_v1_ChallengeResponse__Output } from '../../../tollgate/payment/v1/ChallengeResponse.ts';
import type { VerifyResponse as _tollgate_payment_v1_VerifyResponse, VerifyResponse__Output as _tollgate_payment_v1_VerifyResponse__Output } from '../../../tollgate/payment/v1/VerifyResponse.ts';
import type { SettleResponse as _tollgate_payment_v1_SettleResponse, SettleResponse__Output as _tollgate_payment_v1_SettleResponse__Output } from '../../../tollgate/payment/v1/SettleResponse.ts';
import type { ReleaseResponse as _tollgate_payment_v1_ReleaseResponse, ReleaseResponse__Output as _tollgate_payment_v1_ReleaseResponse__Output } from '../../../tollgate/payment/v1/ReleaseResponse.ts';
import type { CallStatus as _tollgate_mesh_v1_CallStatus, CallStatus__Output as _tollgate_mesh_v1_CallStatus__Output } from '../../../tollgate/mesh/v1/CallStatus.ts';
import type { VerifySignInResponse as _tollgate_payment_v1_VerifySignInResponse, VerifySignInResponse__Output as _tollgate_payment_v1_VerifySignInResponse__Output } from '../../../tollgate/payment/v1/VerifySignInResponse.ts';
import type { ExchangeResponse as _tollgate_payment_v1_ExchangeResponse, ExchangeResponse__Output as _tollgate_payment_v1_ExchangeResponse__Output } from '../../../tollgate/payment/v1/ExchangeResponse.ts';
import type { Long } from '@grpc/proto-loader';

export interface ExchangeResponse {
  /**
   * The id of the call this answers.
   */
  'id'?: (number | string | Long);
  'challenge'?: (_tollgate_payment_v1_ChallengeResponse | null);
  'verify'?: (_tollgate_payment_v1_VerifyResponse | null);
  'settle'?: (_tollgate_payment_v1_SettleResponse | null);
  'release'?: (_tollgate_payment_v1_ReleaseResponse | null);
  /**
   * The call failed as the unary call would have failed.
   */
  'status'?: (_tollgate_mesh_v1_CallStatus | null);
  'verifySignIn'?: (_tollgate_payment_v1_VerifySignInResponse | null);
  /**
   * More answers sent in the same message (their own `more` is empty). Sent only on a stream whose
   * caller announced `tollgate-exchange-batch` in its metadata.
   */
  'more'?: (_tollgate_payment_v1_ExchangeResponse)[];
  'result'?: "challenge"|"verify"|"settle"|"release"|"status"|"verifySignIn";
}

export interface ExchangeResponse__Output {
  /**
   * The id of the call this answers.
   */
  'id': (number);
  'challenge'?: (_tollgate_payment_v1_ChallengeResponse__Output | null);
  'verify'?: (_tollgate_payment_v1_VerifyResponse__Output | null);
  'settle'?: (_tollgate_payment_v1_SettleResponse__Output | null);
  'release'?: (_tollgate_payment_v1_ReleaseResponse__Output | null);
  /**
   * The call failed as the unary call would have failed.
   */
  'status'?: (_tollgate_mesh_v1_CallStatus__Output | null);
  'verifySignIn'?: (_tollgate_payment_v1_VerifySignInResponse__Output | null);
  /**
   * More answers sent in the same message (their own `more` is empty). Sent only on a stream whose
   * caller announced `tollgate-exchange-batch` in its metadata.
   */
  'more': (_tollgate_payment_v1_ExchangeResponse__Output)[];
  'result'?: "challenge"|"verify"|"settle"|"release"|"status"|"verifySignIn";
}
