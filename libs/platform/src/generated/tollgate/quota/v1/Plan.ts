// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Plan: the figures a plan gives a new account (what DescribePlans states).
 */
export interface Plan {
  /**
   * "standard" or "free".
   */
  'name'?: (string);
  /**
   * 0 means uncapped.
   */
  'dailyLimit'?: (number | string | Long);
  'monthlyLimit'?: (number | string | Long);
  /**
   * The burst guard applied (requests per second across all replicas; 0 means none).
   */
  'burstPerSecond'?: (number);
}

/**
 * Plan: the figures a plan gives a new account (what DescribePlans states).
 */
export interface Plan__Output {
  /**
   * "standard" or "free".
   */
  'name': (string);
  /**
   * 0 means uncapped.
   */
  'dailyLimit': (number);
  'monthlyLimit': (number);
  /**
   * The burst guard applied (requests per second across all replicas; 0 means none).
   */
  'burstPerSecond': (number);
}
