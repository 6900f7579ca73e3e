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
  '_status'?: "status";
  '_dailyLimit'?: "dailyLimit";
  '_monthlyLimit'?: "monthlyLimit";
  '_burstPerSecond'?: "burstPerSecond";
  '_plan'?: "plan";
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
  '_status'?: "status";
  '_dailyLimit'?: "dailyLimit";
  '_monthlyLimit'?: "monthlyLimit";
  '_burstPerSecond'?: "burstPerSecond";
  '_plan'?: "plan";
}
