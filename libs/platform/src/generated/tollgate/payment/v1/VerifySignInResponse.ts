// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { SignInError as _tollgate_payment_v1_SignInError, SignInError__Output as _tollgate_payment_v1_SignInError__Output } from '../../../tollgate/payment/v1/SignInError.ts';

export interface VerifySignInResponse {
  'valid'?: (boolean);
  /**
   * The signing wallet, lower-case 0x address (EVM chains only), when valid.
   */
  'wallet'?: (string);
  /**
   * When invalid: why (SIGN_IN_ERROR_UNSPECIFIED when valid).
   */
  'error'?: (_tollgate_payment_v1_SignInError);
  /**
   * Human-readable reason when invalid, for the client.
   */
  'reason'?: (string);
  /**
   * When invalid: the extension's failure code when it names one (for example
   * "invalid_siwx_domain_mismatch", "invalid_siwx_expired", "invalid_siwx_nonce"), else a code of
   * ours ("invalid_siwx_header").
   */
  'code'?: (string);
  /**
   * The proof's chain (CAIP-2), when valid.
   */
  'chainId'?: (string);
}

export interface VerifySignInResponse__Output {
  'valid': (boolean);
  /**
   * The signing wallet, lower-case 0x address (EVM chains only), when valid.
   */
  'wallet': (string);
  /**
   * When invalid: why (SIGN_IN_ERROR_UNSPECIFIED when valid).
   */
  'error': (_tollgate_payment_v1_SignInError__Output);
  /**
   * Human-readable reason when invalid, for the client.
   */
  'reason': (string);
  /**
   * When invalid: the extension's failure code when it names one (for example
   * "invalid_siwx_domain_mismatch", "invalid_siwx_expired", "invalid_siwx_nonce"), else a code of
   * ours ("invalid_siwx_header").
   */
  'code': (string);
  /**
   * The proof's chain (CAIP-2), when valid.
   */
  'chainId': (string);
}
