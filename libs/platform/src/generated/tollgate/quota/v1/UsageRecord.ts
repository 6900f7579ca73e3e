// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type { Long } from '@grpc/proto-loader';

export interface UsageRecord {
  'requestId'?: (string);
  'accountId'?: (string);
  'keyId'?: (string);
  'endpoint'?: (string);
  'network'?: (string);
  'status'?: (number);
  'latencyMs'?: (number | string);
  /**
   * RFC 3339 time the call was received.
   */
  'time'?: (string);
  /**
   * Give the counted unit back (the call failed, so it is not charged).
   */
  'refund'?: (boolean);
  'dayWindow'?: (string);
  'monthWindow'?: (string);
  /**
   * The call failed and its unit went back to the live lease it came from (the next call served
   * from that lease uses it): not counted for this call, and nothing to refund.
   */
  'returnedToLease'?: (boolean);
  /**
   * The call drew credits (AuthorizeResponse.credits): with `refund`, they go back to the account.
   */
  'creditsDrawn'?: (number | string | Long);
  'creditsEpoch'?: (string);
  /**
   * The Authorize (its authorization id) whose credits the call drew: quota-meter counts each
   * credit lease's use, so one a gateway never returned (it died) is settled from what was used.
   */
  'creditLeaseId'?: (string);
}

export interface UsageRecord__Output {
  'requestId': (string);
  'accountId': (string);
  'keyId': (string);
  'endpoint': (string);
  'network': (string);
  'status': (number);
  'latencyMs': (number);
  /**
   * RFC 3339 time the call was received.
   */
  'time': (string);
  /**
   * Give the counted unit back (the call failed, so it is not charged).
   */
  'refund': (boolean);
  'dayWindow': (string);
  'monthWindow': (string);
  /**
   * The call failed and its unit went back to the live lease it came from (the next call served
   * from that lease uses it): not counted for this call, and nothing to refund.
   */
  'returnedToLease': (boolean);
  /**
   * The call drew credits (AuthorizeResponse.credits): with `refund`, they go back to the account.
   */
  'creditsDrawn': (number);
  'creditsEpoch': (string);
  /**
   * The Authorize (its authorization id) whose credits the call drew: quota-meter counts each
   * credit lease's use, so one a gateway never returned (it died) is settled from what was used.
   */
  'creditLeaseId': (string);
}
