// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

export interface CreditTopUpResponse {
  'accountId'?: (string);
  'balance'?: (number | string | Long);
  /**
   * False when this cause was credited before (a retry): the balance is still current.
   */
  'credited'?: (boolean);
  /**
   * Set when the account was created by this top-up.
   */
  'accountCreated'?: (boolean);
}

export interface CreditTopUpResponse__Output {
  'accountId': (string);
  'balance': (number);
  /**
   * False when this cause was credited before (a retry): the balance is still current.
   */
  'credited': (boolean);
  /**
   * Set when the account was created by this top-up.
   */
  'accountCreated': (boolean);
}
