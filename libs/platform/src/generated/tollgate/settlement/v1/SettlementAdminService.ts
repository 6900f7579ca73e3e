// Original file: ../../proto/tollgate/settlement/v1/settlement_worker.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ListSettlementsRequest as _tollgate_settlement_v1_ListSettlementsRequest, ListSettlementsRequest__Output as _tollgate_settlement_v1_ListSettlementsRequest__Output } from '../../../tollgate/settlement/v1/ListSettlementsRequest.ts';
import type { ListSettlementsResponse as _tollgate_settlement_v1_ListSettlementsResponse, ListSettlementsResponse__Output as _tollgate_settlement_v1_ListSettlementsResponse__Output } from '../../../tollgate/settlement/v1/ListSettlementsResponse.ts';
import type { ReconcileRequest as _tollgate_settlement_v1_ReconcileRequest, ReconcileRequest__Output as _tollgate_settlement_v1_ReconcileRequest__Output } from '../../../tollgate/settlement/v1/ReconcileRequest.ts';
import type { ReconcileResponse as _tollgate_settlement_v1_ReconcileResponse, ReconcileResponse__Output as _tollgate_settlement_v1_ReconcileResponse__Output } from '../../../tollgate/settlement/v1/ReconcileResponse.ts';

/**
 * SettlementAdminService is the operator's view of the payment ledger the settlement worker keeps
 * in PostgreSQL (every tollgate.settlement.v2 outcome, once). Every call needs the operator token
 * in the `authorization: Bearer <token>` metadata; no mesh service calls it.
 */
export interface SettlementAdminServiceClient extends grpc.Client {
  /**
   * ListSettlements lists ledger entries by payer, UTC day or channel (at least one), newest
   * first, with totals over everything the filter matches.
   */
  ListSettlements(argument: _tollgate_settlement_v1_ListSettlementsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_settlement_v1_ListSettlementsResponse__Output>): grpc.ClientUnaryCall;
  ListSettlements(argument: _tollgate_settlement_v1_ListSettlementsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_settlement_v1_ListSettlementsResponse__Output>): grpc.ClientUnaryCall;
  ListSettlements(argument: _tollgate_settlement_v1_ListSettlementsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_settlement_v1_ListSettlementsResponse__Output>): grpc.ClientUnaryCall;
  ListSettlements(argument: _tollgate_settlement_v1_ListSettlementsRequest, callback: grpc.requestCallback<_tollgate_settlement_v1_ListSettlementsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * ListSettlements lists ledger entries by payer, UTC day or channel (at least one), newest
   * first, with totals over everything the filter matches.
   */
  listSettlements(argument: _tollgate_settlement_v1_ListSettlementsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_settlement_v1_ListSettlementsResponse__Output>): grpc.ClientUnaryCall;
  listSettlements(argument: _tollgate_settlement_v1_ListSettlementsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_settlement_v1_ListSettlementsResponse__Output>): grpc.ClientUnaryCall;
  listSettlements(argument: _tollgate_settlement_v1_ListSettlementsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_settlement_v1_ListSettlementsResponse__Output>): grpc.ClientUnaryCall;
  listSettlements(argument: _tollgate_settlement_v1_ListSettlementsRequest, callback: grpc.requestCallback<_tollgate_settlement_v1_ListSettlementsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Reconcile compares the ledger with the settlement chain's token transfers to the receiver for
   * a range of blocks and reports every difference.
   */
  Reconcile(argument: _tollgate_settlement_v1_ReconcileRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_settlement_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  Reconcile(argument: _tollgate_settlement_v1_ReconcileRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_settlement_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  Reconcile(argument: _tollgate_settlement_v1_ReconcileRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_settlement_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  Reconcile(argument: _tollgate_settlement_v1_ReconcileRequest, callback: grpc.requestCallback<_tollgate_settlement_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Reconcile compares the ledger with the settlement chain's token transfers to the receiver for
   * a range of blocks and reports every difference.
   */
  reconcile(argument: _tollgate_settlement_v1_ReconcileRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_settlement_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  reconcile(argument: _tollgate_settlement_v1_ReconcileRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_settlement_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  reconcile(argument: _tollgate_settlement_v1_ReconcileRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_settlement_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  reconcile(argument: _tollgate_settlement_v1_ReconcileRequest, callback: grpc.requestCallback<_tollgate_settlement_v1_ReconcileResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * SettlementAdminService is the operator's view of the payment ledger the settlement worker keeps
 * in PostgreSQL (every tollgate.settlement.v2 outcome, once). Every call needs the operator token
 * in the `authorization: Bearer <token>` metadata; no mesh service calls it.
 */
export interface SettlementAdminServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * ListSettlements lists ledger entries by payer, UTC day or channel (at least one), newest
   * first, with totals over everything the filter matches.
   */
  ListSettlements: grpc.handleUnaryCall<_tollgate_settlement_v1_ListSettlementsRequest__Output, _tollgate_settlement_v1_ListSettlementsResponse>;
  
  /**
   * Reconcile compares the ledger with the settlement chain's token transfers to the receiver for
   * a range of blocks and reports every difference.
   */
  Reconcile: grpc.handleUnaryCall<_tollgate_settlement_v1_ReconcileRequest__Output, _tollgate_settlement_v1_ReconcileResponse>;
  
}

export interface SettlementAdminServiceDefinition extends grpc.ServiceDefinition {
  ListSettlements: MethodDefinition<_tollgate_settlement_v1_ListSettlementsRequest, _tollgate_settlement_v1_ListSettlementsResponse, _tollgate_settlement_v1_ListSettlementsRequest__Output, _tollgate_settlement_v1_ListSettlementsResponse__Output>
  Reconcile: MethodDefinition<_tollgate_settlement_v1_ReconcileRequest, _tollgate_settlement_v1_ReconcileResponse, _tollgate_settlement_v1_ReconcileRequest__Output, _tollgate_settlement_v1_ReconcileResponse__Output>
}
