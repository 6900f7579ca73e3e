// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

export interface UpdateAccountRequest {
  'accountId'?: (string);
  'status'?: (string);
  'dailyLimit'?: (number | string | Long);
  'monthlyLimit'?: (number | string | Long);
  'burstPerSecond'?: (number);
  '_status'?: "status";
  '_dailyLimit'?: "dailyLimit";
  '_monthlyLimit'?: "monthlyLimit";
  '_burstPerSecond'?: "burstPerSecond";
}

export interface UpdateAccountRequest__Output {
  'accountId': (string);
  'status'?: (string);
  'dailyLimit'?: (number);
  'monthlyLimit'?: (number);
  'burstPerSecond'?: (number);
  '_status'?: "status";
  '_dailyLimit'?: "dailyLimit";
  '_monthlyLimit'?: "monthlyLimit";
  '_burstPerSecond'?: "burstPerSecond";
}
