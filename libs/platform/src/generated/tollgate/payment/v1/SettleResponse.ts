// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { Header as _tollgate_payment_v1_Header, Header__Output as _tollgate_payment_v1_Header__Output } from '../../../tollgate/payment/v1/Header.ts';
import type { PaymentMeta as _tollgate_payment_v1_PaymentMeta, PaymentMeta__Output as _tollgate_payment_v1_PaymentMeta__Output } from '../../../tollgate/payment/v1/PaymentMeta.ts';
import type { Accrual as _tollgate_payment_v1_Accrual, Accrual__Output as _tollgate_payment_v1_Accrual__Output } from '../../../tollgate/payment/v1/Accrual.ts';
import type { Problem as _tollgate_payment_v1_Problem, Problem__Output as _tollgate_payment_v1_Problem__Output } from '../../../tollgate/payment/v1/Problem.ts';
import type { PaymentError as _tollgate_payment_v1_PaymentError, PaymentError__Output as _tollgate_payment_v1_PaymentError__Output } from '../../../tollgate/payment/v1/PaymentError.ts';

export interface SettleResponse {
  'settled'?: (boolean);
  /**
   * Deprecated: read `error`. The same refusal as a string, still filled for one release (see
   * VerifyResponse.error_code).
   * @deprecated
   */
  'errorCode'?: (string);
  'reason'?: (string);
  /**
   * Headers for the client: PAYMENT-RESPONSE or Payment-Receipt on success, a fresh
   * challenge on failure.
   */
  'headers'?: (_tollgate_payment_v1_Header)[];
  'meta'?: (_tollgate_payment_v1_PaymentMeta | null);
  /**
   * The transaction that moved the money, when it moved now.
   */
  'transaction'?: (string);
  /**
   * The channel the call was charged to, when the scheme accrues and settles later.
   */
  'accrual'?: (_tollgate_payment_v1_Accrual | null);
  /**
   * When not settled: the protocol's problem for the refusal, if it defines one.
   */
  'problem'?: (_tollgate_payment_v1_Problem | null);
  /**
   * When not settled: why (PAYMENT_ERROR_UNSPECIFIED when settled).
   */
  'error'?: (_tollgate_payment_v1_PaymentError);
}

export interface SettleResponse__Output {
  'settled': (boolean);
  /**
   * Deprecated: read `error`. The same refusal as a string, still filled for one release (see
   * VerifyResponse.error_code).
   * @deprecated
   */
  'errorCode': (string);
  'reason': (string);
  /**
   * Headers for the client: PAYMENT-RESPONSE or Payment-Receipt on success, a fresh
   * challenge on failure.
   */
  'headers': (_tollgate_payment_v1_Header__Output)[];
  'meta': (_tollgate_payment_v1_PaymentMeta__Output | null);
  /**
   * The transaction that moved the money, when it moved now.
   */
  'transaction': (string);
  /**
   * The channel the call was charged to, when the scheme accrues and settles later.
   */
  'accrual': (_tollgate_payment_v1_Accrual__Output | null);
  /**
   * When not settled: the protocol's problem for the refusal, if it defines one.
   */
  'problem': (_tollgate_payment_v1_Problem__Output | null);
  /**
   * When not settled: why (PAYMENT_ERROR_UNSPECIFIED when settled).
   */
  'error': (_tollgate_payment_v1_PaymentError__Output);
}
