// Original file: ../../proto/tollgate/settlement/v1/settlement_worker.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ListOwnPaymentsRequest as _tollgate_settlement_v1_ListOwnPaymentsRequest, ListOwnPaymentsRequest__Output as _tollgate_settlement_v1_ListOwnPaymentsRequest__Output } from '../../../tollgate/settlement/v1/ListOwnPaymentsRequest.ts';
import type { ListOwnPaymentsResponse as _tollgate_settlement_v1_ListOwnPaymentsResponse, ListOwnPaymentsResponse__Output as _tollgate_settlement_v1_ListOwnPaymentsResponse__Output } from '../../../tollgate/settlement/v1/ListOwnPaymentsResponse.ts';

/**
 * SettlementAccountService shows one payer its own per-call payments, for the account dashboard
 * (mesh caller `dashboard`, its mesh token; no other caller and no other method). The dashboard
 * names the address its user proved with a wallet signature; the worker lists nothing else.
 */
export interface SettlementAccountServiceClient extends grpc.Client {
  /**
   * ListOwnPayments lists the payer's per-call payments (outcomes `settled`: paid on chain per
   * call, and `accrued`: charged to a channel), newest first, a bounded page at a time.
   */
  ListOwnPayments(argument: _tollgate_settlement_v1_ListOwnPaymentsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_settlement_v1_ListOwnPaymentsResponse__Output>): grpc.ClientUnaryCall;
  ListOwnPayments(argument: _tollgate_settlement_v1_ListOwnPaymentsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_settlement_v1_ListOwnPaymentsResponse__Output>): grpc.ClientUnaryCall;
  ListOwnPayments(argument: _tollgate_settlement_v1_ListOwnPaymentsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_settlement_v1_ListOwnPaymentsResponse__Output>): grpc.ClientUnaryCall;
  ListOwnPayments(argument: _tollgate_settlement_v1_ListOwnPaymentsRequest, callback: grpc.requestCallback<_tollgate_settlement_v1_ListOwnPaymentsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * ListOwnPayments lists the payer's per-call payments (outcomes `settled`: paid on chain per
   * call, and `accrued`: charged to a channel), newest first, a bounded page at a time.
   */
  listOwnPayments(argument: _tollgate_settlement_v1_ListOwnPaymentsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_settlement_v1_ListOwnPaymentsResponse__Output>): grpc.ClientUnaryCall;
  listOwnPayments(argument: _tollgate_settlement_v1_ListOwnPaymentsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_settlement_v1_ListOwnPaymentsResponse__Output>): grpc.ClientUnaryCall;
  listOwnPayments(argument: _tollgate_settlement_v1_ListOwnPaymentsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_settlement_v1_ListOwnPaymentsResponse__Output>): grpc.ClientUnaryCall;
  listOwnPayments(argument: _tollgate_settlement_v1_ListOwnPaymentsRequest, callback: grpc.requestCallback<_tollgate_settlement_v1_ListOwnPaymentsResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * SettlementAccountService shows one payer its own per-call payments, for the account dashboard
 * (mesh caller `dashboard`, its mesh token; no other caller and no other method). The dashboard
 * names the address its user proved with a wallet signature; the worker lists nothing else.
 */
export interface SettlementAccountServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * ListOwnPayments lists the payer's per-call payments (outcomes `settled`: paid on chain per
   * call, and `accrued`: charged to a channel), newest first, a bounded page at a time.
   */
  ListOwnPayments: grpc.handleUnaryCall<_tollgate_settlement_v1_ListOwnPaymentsRequest__Output, _tollgate_settlement_v1_ListOwnPaymentsResponse>;
  
}

export interface SettlementAccountServiceDefinition extends grpc.ServiceDefinition {
  ListOwnPayments: MethodDefinition<_tollgate_settlement_v1_ListOwnPaymentsRequest, _tollgate_settlement_v1_ListOwnPaymentsResponse, _tollgate_settlement_v1_ListOwnPaymentsRequest__Output, _tollgate_settlement_v1_ListOwnPaymentsResponse__Output>
}
