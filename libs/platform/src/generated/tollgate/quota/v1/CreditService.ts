// Original file: ../../proto/tollgate/quota/v1/quota_meter.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CreditTopUpRequest as _tollgate_quota_v1_CreditTopUpRequest, CreditTopUpRequest__Output as _tollgate_quota_v1_CreditTopUpRequest__Output } from '../../../tollgate/quota/v1/CreditTopUpRequest.ts';
import type { CreditTopUpResponse as _tollgate_quota_v1_CreditTopUpResponse, CreditTopUpResponse__Output as _tollgate_quota_v1_CreditTopUpResponse__Output } from '../../../tollgate/quota/v1/CreditTopUpResponse.ts';

/**
 * CreditService adds prepaid credits to an account, called by the gateway (mesh caller "gateway")
 * after payment-verifier settled a top-up payment. Credits are USDC atomic units; the ledger in
 * PostgreSQL is their record, Redis their hot copy (as for quota windows).
 */
export interface CreditServiceClient extends grpc.Client {
  /**
   * CreditTopUp credits a settled payment once per cause, whatever retries or replicas send it.
   */
  CreditTopUp(argument: _tollgate_quota_v1_CreditTopUpRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreditTopUpResponse__Output>): grpc.ClientUnaryCall;
  CreditTopUp(argument: _tollgate_quota_v1_CreditTopUpRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_CreditTopUpResponse__Output>): grpc.ClientUnaryCall;
  CreditTopUp(argument: _tollgate_quota_v1_CreditTopUpRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreditTopUpResponse__Output>): grpc.ClientUnaryCall;
  CreditTopUp(argument: _tollgate_quota_v1_CreditTopUpRequest, callback: grpc.requestCallback<_tollgate_quota_v1_CreditTopUpResponse__Output>): grpc.ClientUnaryCall;
  /**
   * CreditTopUp credits a settled payment once per cause, whatever retries or replicas send it.
   */
  creditTopUp(argument: _tollgate_quota_v1_CreditTopUpRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreditTopUpResponse__Output>): grpc.ClientUnaryCall;
  creditTopUp(argument: _tollgate_quota_v1_CreditTopUpRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_quota_v1_CreditTopUpResponse__Output>): grpc.ClientUnaryCall;
  creditTopUp(argument: _tollgate_quota_v1_CreditTopUpRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_quota_v1_CreditTopUpResponse__Output>): grpc.ClientUnaryCall;
  creditTopUp(argument: _tollgate_quota_v1_CreditTopUpRequest, callback: grpc.requestCallback<_tollgate_quota_v1_CreditTopUpResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * CreditService adds prepaid credits to an account, called by the gateway (mesh caller "gateway")
 * after payment-verifier settled a top-up payment. Credits are USDC atomic units; the ledger in
 * PostgreSQL is their record, Redis their hot copy (as for quota windows).
 */
export interface CreditServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * CreditTopUp credits a settled payment once per cause, whatever retries or replicas send it.
   */
  CreditTopUp: grpc.handleUnaryCall<_tollgate_quota_v1_CreditTopUpRequest__Output, _tollgate_quota_v1_CreditTopUpResponse>;
  
}

export interface CreditServiceDefinition extends grpc.ServiceDefinition {
  CreditTopUp: MethodDefinition<_tollgate_quota_v1_CreditTopUpRequest, _tollgate_quota_v1_CreditTopUpResponse, _tollgate_quota_v1_CreditTopUpRequest__Output, _tollgate_quota_v1_CreditTopUpResponse__Output>
}
