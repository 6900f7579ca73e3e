// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

export interface CreateAccountRequest {
  'name'?: (string);
  'dailyLimit'?: (number | string | Long);
  'monthlyLimit'?: (number | string | Long);
  'burstPerSecond'?: (number);
  /**
   * "standard" when unset; limits not given take the plan's figures.
   */
  'plan'?: (string);
  /**
   * Calls are paid from prepaid credits only (no plan windows); false when unset.
   */
  'creditsOnly'?: (boolean);
  '_dailyLimit'?: "dailyLimit";
  '_monthlyLimit'?: "monthlyLimit";
  '_burstPerSecond'?: "burstPerSecond";
  '_plan'?: "plan";
  '_creditsOnly'?: "creditsOnly";
}

export interface CreateAccountRequest__Output {
  'name': (string);
  'dailyLimit'?: (number);
  'monthlyLimit'?: (number);
  'burstPerSecond'?: (number);
  /**
   * "standard" when unset; limits not given take the plan's figures.
   */
  'plan'?: (string);
  /**
   * Calls are paid from prepaid credits only (no plan windows); false when unset.
   */
  'creditsOnly'?: (boolean);
  '_dailyLimit'?: "dailyLimit";
  '_monthlyLimit'?: "monthlyLimit";
  '_burstPerSecond'?: "burstPerSecond";
  '_plan'?: "plan";
  '_creditsOnly'?: "creditsOnly";
}
