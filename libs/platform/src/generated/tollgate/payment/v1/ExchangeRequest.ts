// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { ChallengeRequest as _tollgate_payment_v1_ChallengeRequest, ChallengeRequest__Output as _tollgate_payment_v1_ChallengeRequest__Output } from '../../../tollgate/payment/v1/ChallengeRequest.ts';
import type { VerifyRequest as _tollgate_payment_v1_VerifyRequest, VerifyRequest__Output as _tollgate_payment_v1_VerifyRequest__Output } from '../../../tollgate/payment/v1/VerifyRequest.ts';
import type { SettleRequest as _tollgate_payment_v1_SettleRequest, SettleRequest__Output as _tollgate_payment_v1_SettleRequest__Output } from '../../../tollgate/payment/v1/SettleRequest.ts';
import type { ReleaseRequest as _tollgate_payment_v1_ReleaseRequest, ReleaseRequest__Output as _tollgate_payment_v1_ReleaseRequest__Output } from '../../../tollgate/payment/v1/ReleaseRequest.ts';
import type { VerifySignInRequest as _tollgate_payment_v1_VerifySignInRequest, VerifySignInRequest__Output as _tollgate_payment_v1_VerifySignInRequest__Output } from '../../../tollgate/payment/v1/VerifySignInRequest.ts';
import type { ExchangeRequest as _tollgate_payment_v1_ExchangeRequest, ExchangeRequest__Output as _tollgate_payment_v1_ExchangeRequest__Output } from '../../../tollgate/payment/v1/ExchangeRequest.ts';
import type { Long } from '@grpc/proto-loader';

export interface ExchangeRequest {
  /**
   * The caller's number for this call on this stream, unique among its unanswered calls.
   */
  'id'?: (number | string | Long);
  /**
   * How long the caller waits for the answer, in milliseconds: the unary call's deadline.
   */
  'timeoutMs'?: (number);
  'challenge'?: (_tollgate_payment_v1_ChallengeRequest | null);
  'verify'?: (_tollgate_payment_v1_VerifyRequest | null);
  'settle'?: (_tollgate_payment_v1_SettleRequest | null);
  'release'?: (_tollgate_payment_v1_ReleaseRequest | null);
  'verifySignIn'?: (_tollgate_payment_v1_VerifySignInRequest | null);
  /**
   * More calls sent in the same message, each with its own id, timeout and call (their own `more`
   * is empty). Sent only on a stream whose server announced `tollgate-exchange-batch` in its
   * initial metadata; a caller sends the calls it makes within one turn of its event loop together.
   */
  'more'?: (_tollgate_payment_v1_ExchangeRequest)[];
  'call'?: "challenge"|"verify"|"settle"|"release"|"verifySignIn";
}

export interface ExchangeRequest__Output {
  /**
   * The caller's number for this call on this stream, unique among its unanswered calls.
   */
  'id': (number);
  /**
   * How long the caller waits for the answer, in milliseconds: the unary call's deadline.
   */
  'timeoutMs': (number);
  'challenge'?: (_tollgate_payment_v1_ChallengeRequest__Output | null);
  'verify'?: (_tollgate_payment_v1_VerifyRequest__Output | null);
  'settle'?: (_tollgate_payment_v1_SettleRequest__Output | null);
  'release'?: (_tollgate_payment_v1_ReleaseRequest__Output | null);
  'verifySignIn'?: (_tollgate_payment_v1_VerifySignInRequest__Output | null);
  /**
   * More calls sent in the same message, each with its own id, timeout and call (their own `more`
   * is empty). Sent only on a stream whose server announced `tollgate-exchange-batch` in its
   * initial metadata; a caller sends the calls it makes within one turn of its event loop together.
   */
  'more': (_tollgate_payment_v1_ExchangeRequest__Output)[];
  'call'?: "challenge"|"verify"|"settle"|"release"|"verifySignIn";
}
