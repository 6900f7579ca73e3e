// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AuthorizeRequest as _tollgate_quota_v1_AuthorizeRequest, AuthorizeRequest__Output as _tollgate_quota_v1_AuthorizeRequest__Output } from '../../../tollgate/quota/v1/AuthorizeRequest.ts';
import type { AuthorizeResponse as _tollgate_quota_v1_AuthorizeResponse, AuthorizeResponse__Output as _tollgate_quota_v1_AuthorizeResponse__Output } from '../../../tollgate/quota/v1/AuthorizeResponse.ts';
import type { DescribePlansRequest as _tollgate_quota_v1_DescribePlansRequest, DescribePlansRequest__Output as _tollgate_quota_v1_DescribePlansRequest__Output } from '../../../tollgate/quota/v1/DescribePlansRequest.ts';
import type { DescribePlansResponse as _tollgate_quota_v1_DescribePlansResponse, DescribePlansResponse__Output as _tollgate_quota_v1_DescribePlansResponse__Output } from '../../../tollgate/quota/v1/DescribePlansResponse.ts';
import type { GetUsageRequest as _tollgate_quota_v1_GetUsageRequest, GetUsageRequest__Output as _tollgate_quota_v1_GetUsageRequest__Output } from '../../../tollgate/quota/v1/GetUsageRequest.ts';
import type { GetUsageResponse as _tollgate_quota_v1_GetUsageResponse, GetUsageResponse__Output as _tollgate_quota_v1_GetUsageResponse__Output } from '../../../tollgate/quota/v1/GetUsageResponse.ts';
import type { ReportUsageRequest as _tollgate_quota_v1_ReportUsageRequest, ReportUsageRequest__Output as _tollgate_quota_v1_ReportUsageRequest__Output } from '../../../tollgate/quota/v1/ReportUsageRequest.ts';
import type { ReportUsageResponse as _tollgate_quota_v1_ReportUsageResponse, ReportUsageResponse__Output as _tollgate_quota_v1_ReportUsageResponse__Output } from '../../../tollgate/quota/v1/ReportUsageResponse.ts';

/**
 * QuotaMeterService meters API-key calls: key validation, subscription status, the
 * daily and monthly windows (UTC, account-wide) and the burst guard.
 */
export interface QuotaMeterServiceClient extends grpc.Client {
  /**
   * Authorize validates a key and counts one call in both windows, atomically and in
   * one store round trip. When the store is unreachable it answers ALLOW without
   * quota values (spec 8.3): absence never means blocked.
   */
  Authorize(argument: _tollgate_quota_v1_AuthorizeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_AuthorizeResponse__Output>): grpc.ClientUnaryCall;
  Authorize(argument: _tollgate_quota_v1_AuthorizeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_AuthorizeResponse__Output>): grpc.ClientUnaryCall;
  Authorize(argument: _tollgate_quota_v1_AuthorizeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_AuthorizeResponse__Output>): grpc.ClientUnaryCall;
  Authorize(argument: _tollgate_quota_v1_AuthorizeRequest, callback: grpc.requestCallback<_tollgate_quota_v1_AuthorizeResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Authorize validates a key and counts one call in both windows, atomically and in
   * one store round trip. When the store is unreachable it answers ALLOW without
   * quota values (spec 8.3): absence never means blocked.
   */
  authorize(argument: _tollgate_quota_v1_AuthorizeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_AuthorizeResponse__Output>): grpc.ClientUnaryCall;
  authorize(argument: _tollgate_quota_v1_AuthorizeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_AuthorizeResponse__Output>): grpc.ClientUnaryCall;
  authorize(argument: _tollgate_quota_v1_AuthorizeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_AuthorizeResponse__Output>): grpc.ClientUnaryCall;
  authorize(argument: _tollgate_quota_v1_AuthorizeRequest, callback: grpc.requestCallback<_tollgate_quota_v1_AuthorizeResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * DescribePlans states the plans new accounts get, as configured here: the one source of the
   * figures the gateway's /api/pricing, /openapi.json and /llms.txt and the dashboard show.
   */
  DescribePlans(argument: _tollgate_quota_v1_DescribePlansRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_DescribePlansResponse__Output>): grpc.ClientUnaryCall;
  DescribePlans(argument: _tollgate_quota_v1_DescribePlansRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_DescribePlansResponse__Output>): grpc.ClientUnaryCall;
  DescribePlans(argument: _tollgate_quota_v1_DescribePlansRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_DescribePlansResponse__Output>): grpc.ClientUnaryCall;
  DescribePlans(argument: _tollgate_quota_v1_DescribePlansRequest, callback: grpc.requestCallback<_tollgate_quota_v1_DescribePlansResponse__Output>): grpc.ClientUnaryCall;
  /**
   * DescribePlans states the plans new accounts get, as configured here: the one source of the
   * figures the gateway's /api/pricing, /openapi.json and /llms.txt and the dashboard show.
   */
  describePlans(argument: _tollgate_quota_v1_DescribePlansRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_DescribePlansResponse__Output>): grpc.ClientUnaryCall;
  describePlans(argument: _tollgate_quota_v1_DescribePlansRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_DescribePlansResponse__Output>): grpc.ClientUnaryCall;
  describePlans(argument: _tollgate_quota_v1_DescribePlansRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_DescribePlansResponse__Output>): grpc.ClientUnaryCall;
  describePlans(argument: _tollgate_quota_v1_DescribePlansRequest, callback: grpc.requestCallback<_tollgate_quota_v1_DescribePlansResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * GetUsage returns the per-day usage of the account that owns the key.
   */
  GetUsage(argument: _tollgate_quota_v1_GetUsageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  GetUsage(argument: _tollgate_quota_v1_GetUsageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  GetUsage(argument: _tollgate_quota_v1_GetUsageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  GetUsage(argument: _tollgate_quota_v1_GetUsageRequest, callback: grpc.requestCallback<_tollgate_quota_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  /**
   * GetUsage returns the per-day usage of the account that owns the key.
   */
  getUsage(argument: _tollgate_quota_v1_GetUsageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  getUsage(argument: _tollgate_quota_v1_GetUsageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  getUsage(argument: _tollgate_quota_v1_GetUsageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  getUsage(argument: _tollgate_quota_v1_GetUsageRequest, callback: grpc.requestCallback<_tollgate_quota_v1_GetUsageResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * ReportUsage records finished calls (batched by the gateway, off the hot path):
   * it gives back the unit of a call that failed and publishes usage events.
   */
  ReportUsage(argument: _tollgate_quota_v1_ReportUsageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ReportUsageResponse__Output>): grpc.ClientUnaryCall;
  ReportUsage(argument: _tollgate_quota_v1_ReportUsageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_ReportUsageResponse__Output>): grpc.ClientUnaryCall;
  ReportUsage(argument: _tollgate_quota_v1_ReportUsageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ReportUsageResponse__Output>): grpc.ClientUnaryCall;
  ReportUsage(argument: _tollgate_quota_v1_ReportUsageRequest, callback: grpc.requestCallback<_tollgate_quota_v1_ReportUsageResponse__Output>): grpc.ClientUnaryCall;
  /**
   * ReportUsage records finished calls (batched by the gateway, off the hot path):
   * it gives back the unit of a call that failed and publishes usage events.
   */
  reportUsage(argument: _tollgate_quota_v1_ReportUsageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ReportUsageResponse__Output>): grpc.ClientUnaryCall;
  reportUsage(argument: _tollgate_quota_v1_ReportUsageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_ReportUsageResponse__Output>): grpc.ClientUnaryCall;
  reportUsage(argument: _tollgate_quota_v1_ReportUsageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_ReportUsageResponse__Output>): grpc.ClientUnaryCall;
  reportUsage(argument: _tollgate_quota_v1_ReportUsageRequest, callback: grpc.requestCallback<_tollgate_quota_v1_ReportUsageResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * QuotaMeterService meters API-key calls: key validation, subscription status, the
 * daily and monthly windows (UTC, account-wide) and the burst guard.
 */
export interface QuotaMeterServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Authorize validates a key and counts one call in both windows, atomically and in
   * one store round trip. When the store is unreachable it answers ALLOW without
   * quota values (spec 8.3): absence never means blocked.
   */
  Authorize: grpc.handleUnaryCall<_tollgate_quota_v1_AuthorizeRequest__Output, _tollgate_quota_v1_AuthorizeResponse>;
  
  /**
   * DescribePlans states the plans new accounts get, as configured here: the one source of the
   * figures the gateway's /api/pricing, /openapi.json and /llms.txt and the dashboard show.
   */
  DescribePlans: grpc.handleUnaryCall<_tollgate_quota_v1_DescribePlansRequest__Output, _tollgate_quota_v1_DescribePlansResponse>;
  
  /**
   * GetUsage returns the per-day usage of the account that owns the key.
   */
  GetUsage: grpc.handleUnaryCall<_tollgate_quota_v1_GetUsageRequest__Output, _tollgate_quota_v1_GetUsageResponse>;
  
  /**
   * ReportUsage records finished calls (batched by the gateway, off the hot path):
   * it gives back the unit of a call that failed and publishes usage events.
   */
  ReportUsage: grpc.handleUnaryCall<_tollgate_quota_v1_ReportUsageRequest__Output, _tollgate_quota_v1_ReportUsageResponse>;
  
}

export interface QuotaMeterServiceDefinition extends grpc.ServiceDefinition {
  Authorize: MethodDefinition<_tollgate_quota_v1_AuthorizeRequest, _tollgate_quota_v1_AuthorizeResponse, _tollgate_quota_v1_AuthorizeRequest__Output, _tollgate_quota_v1_AuthorizeResponse__Output>
  DescribePlans: MethodDefinition<_tollgate_quota_v1_DescribePlansRequest, _tollgate_quota_v1_DescribePlansResponse, _tollgate_quota_v1_DescribePlansRequest__Output, _tollgate_quota_v1_DescribePlansResponse__Output>
  GetUsage: MethodDefinition<_tollgate_quota_v1_GetUsageRequest, _tollgate_quota_v1_GetUsageResponse, _tollgate_quota_v1_GetUsageRequest__Output, _tollgate_quota_v1_GetUsageResponse__Output>
  ReportUsage: MethodDefinition<_tollgate_quota_v1_ReportUsageRequest, _tollgate_quota_v1_ReportUsageResponse, _tollgate_quota_v1_ReportUsageRequest__Output, _tollgate_quota_v1_ReportUsageResponse__Output>
}
