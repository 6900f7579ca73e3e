// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

export interface UpdateAccountRequest {
  'accountId'?: (string);
  'status'?: (string);
  'dailyLimit'?: (number | string | Long);
  'monthlyLimit'?: (number | string | Long);
  'burstPerSecond'?: (number);
  /**
   * Moves the account to this plan: limits not given take the plan's figures.
   */
  'plan'?: (string);
  /**
   * Calls are paid from prepaid credits only (true), or on the plan first (false).
   */
  'creditsOnly'?: (boolean);
  '_status'?: "status";
  '_dailyLimit'?: "dailyLimit";
  '_monthlyLimit'?: "monthlyLimit";
  '_burstPerSecond'?: "burstPerSecond";
  '_plan'?: "plan";
  '_creditsOnly'?: "creditsOnly";
}

export interface UpdateAccountRequest__Output {
  'accountId': (string);
  'status'?: (string);
  'dailyLimit'?: (number);
  'monthlyLimit'?: (number);
  'burstPerSecond'?: (number);
  /**
   * Moves the account to this plan: limits not given take the plan's figures.
   */
  'plan'?: (string);
  /**
   * Calls are paid from prepaid credits only (true), or on the plan first (false).
   */
  'creditsOnly'?: (boolean);
  '_status'?: "status";
  '_dailyLimit'?: "dailyLimit";
  '_monthlyLimit'?: "monthlyLimit";
  '_burstPerSecond'?: "burstPerSecond";
  '_plan'?: "plan";
  '_creditsOnly'?: "creditsOnly";
}
