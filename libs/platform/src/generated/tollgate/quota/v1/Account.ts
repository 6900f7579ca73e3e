// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

export interface Account {
  'id'?: (string);
  'name'?: (string);
  /**
   * "active", "past_due", "canceled" or "suspended"; only "active" is served.
   */
  'status'?: (string);
  /**
   * 0 means uncapped.
   */
  'dailyLimit'?: (number | string | Long);
  'monthlyLimit'?: (number | string | Long);
  /**
   * Burst guard: requests per second across all replicas; 0 means the default.
   */
  'burstPerSecond'?: (number);
  'createdAt'?: (string);
  /**
   * The plan the account is on: "standard" (the operator's) or "free" (made by a first dashboard
   * sign-in). The limits above are the account's own, set from the plan's figures when it joined.
   */
  'plan'?: (string);
  /**
   * Prepaid credits, USDC atomic units (the hot copy's balance; 0 when unknown).
   */
  'credits'?: (number | string | Long);
  /**
   * Calls are paid from credits only (no plan windows).
   */
  'creditsOnly'?: (boolean);
}

export interface Account__Output {
  'id': (string);
  'name': (string);
  /**
   * "active", "past_due", "canceled" or "suspended"; only "active" is served.
   */
  'status': (string);
  /**
   * 0 means uncapped.
   */
  'dailyLimit': (number);
  'monthlyLimit': (number);
  /**
   * Burst guard: requests per second across all replicas; 0 means the default.
   */
  'burstPerSecond': (number);
  'createdAt': (string);
  /**
   * The plan the account is on: "standard" (the operator's) or "free" (made by a first dashboard
   * sign-in). The limits above are the account's own, set from the plan's figures when it joined.
   */
  'plan': (string);
  /**
   * Prepaid credits, USDC atomic units (the hot copy's balance; 0 when unknown).
   */
  'credits': (number);
  /**
   * Calls are paid from credits only (no plan windows).
   */
  'creditsOnly': (boolean);
}
