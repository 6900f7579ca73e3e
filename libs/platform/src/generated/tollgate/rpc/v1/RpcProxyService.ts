// Original file: ../../proto/tollgate/rpc/v1/rpc_proxy.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ExecuteRequest as _tollgate_rpc_v1_ExecuteRequest, ExecuteRequest__Output as _tollgate_rpc_v1_ExecuteRequest__Output } from '../../../tollgate/rpc/v1/ExecuteRequest.ts';
import type { ExecuteResponse as _tollgate_rpc_v1_ExecuteResponse, ExecuteResponse__Output as _tollgate_rpc_v1_ExecuteResponse__Output } from '../../../tollgate/rpc/v1/ExecuteResponse.ts';
import type { ListNetworksRequest as _tollgate_rpc_v1_ListNetworksRequest, ListNetworksRequest__Output as _tollgate_rpc_v1_ListNetworksRequest__Output } from '../../../tollgate/rpc/v1/ListNetworksRequest.ts';
import type { ListNetworksResponse as _tollgate_rpc_v1_ListNetworksResponse, ListNetworksResponse__Output as _tollgate_rpc_v1_ListNetworksResponse__Output } from '../../../tollgate/rpc/v1/ListNetworksResponse.ts';

/**
 * RpcProxyService runs read-only chain operations against the operator's upstream
 * nodes. An operation is one endpoint of the public catalog (libs/catalog): its
 * parameters and result are described there once, as JSON schemas, so this contract
 * carries them as JSON instead of restating fifteen message shapes.
 * 
 * Errors: a gRPC status whose trailing metadata carries `tollgate-error-code`
 * (a catalog error code such as `execution_reverted`) and, when there is more to
 * say, `tollgate-error-detail` (JSON object, for example the revert data).
 */
export interface RpcProxyServiceClient extends grpc.Client {
  /**
   * Execute runs one catalog operation on one network.
   */
  Execute(argument: _tollgate_rpc_v1_ExecuteRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_rpc_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  Execute(argument: _tollgate_rpc_v1_ExecuteRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_rpc_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  Execute(argument: _tollgate_rpc_v1_ExecuteRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_rpc_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  Execute(argument: _tollgate_rpc_v1_ExecuteRequest, callback: grpc.requestCallback<_tollgate_rpc_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Execute runs one catalog operation on one network.
   */
  execute(argument: _tollgate_rpc_v1_ExecuteRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_rpc_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  execute(argument: _tollgate_rpc_v1_ExecuteRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_rpc_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  execute(argument: _tollgate_rpc_v1_ExecuteRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_rpc_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  execute(argument: _tollgate_rpc_v1_ExecuteRequest, callback: grpc.requestCallback<_tollgate_rpc_v1_ExecuteResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * ListNetworks reports the configured networks and the health of their upstreams.
   */
  ListNetworks(argument: _tollgate_rpc_v1_ListNetworksRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_rpc_v1_ListNetworksResponse__Output>): grpc.ClientUnaryCall;
  ListNetworks(argument: _tollgate_rpc_v1_ListNetworksRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_rpc_v1_ListNetworksResponse__Output>): grpc.ClientUnaryCall;
  ListNetworks(argument: _tollgate_rpc_v1_ListNetworksRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_rpc_v1_ListNetworksResponse__Output>): grpc.ClientUnaryCall;
  ListNetworks(argument: _tollgate_rpc_v1_ListNetworksRequest, callback: grpc.requestCallback<_tollgate_rpc_v1_ListNetworksResponse__Output>): grpc.ClientUnaryCall;
  /**
   * ListNetworks reports the configured networks and the health of their upstreams.
   */
  listNetworks(argument: _tollgate_rpc_v1_ListNetworksRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_rpc_v1_ListNetworksResponse__Output>): grpc.ClientUnaryCall;
  listNetworks(argument: _tollgate_rpc_v1_ListNetworksRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_rpc_v1_ListNetworksResponse__Output>): grpc.ClientUnaryCall;
  listNetworks(argument: _tollgate_rpc_v1_ListNetworksRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_rpc_v1_ListNetworksResponse__Output>): grpc.ClientUnaryCall;
  listNetworks(argument: _tollgate_rpc_v1_ListNetworksRequest, callback: grpc.requestCallback<_tollgate_rpc_v1_ListNetworksResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * RpcProxyService runs read-only chain operations against the operator's upstream
 * nodes. An operation is one endpoint of the public catalog (libs/catalog): its
 * parameters and result are described there once, as JSON schemas, so this contract
 * carries them as JSON instead of restating fifteen message shapes.
 * 
 * Errors: a gRPC status whose trailing metadata carries `tollgate-error-code`
 * (a catalog error code such as `execution_reverted`) and, when there is more to
 * say, `tollgate-error-detail` (JSON object, for example the revert data).
 */
export interface RpcProxyServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Execute runs one catalog operation on one network.
   */
  Execute: grpc.handleUnaryCall<_tollgate_rpc_v1_ExecuteRequest__Output, _tollgate_rpc_v1_ExecuteResponse>;
  
  /**
   * ListNetworks reports the configured networks and the health of their upstreams.
   */
  ListNetworks: grpc.handleUnaryCall<_tollgate_rpc_v1_ListNetworksRequest__Output, _tollgate_rpc_v1_ListNetworksResponse>;
  
}

export interface RpcProxyServiceDefinition extends grpc.ServiceDefinition {
  Execute: MethodDefinition<_tollgate_rpc_v1_ExecuteRequest, _tollgate_rpc_v1_ExecuteResponse, _tollgate_rpc_v1_ExecuteRequest__Output, _tollgate_rpc_v1_ExecuteResponse__Output>
  ListNetworks: MethodDefinition<_tollgate_rpc_v1_ListNetworksRequest, _tollgate_rpc_v1_ListNetworksResponse, _tollgate_rpc_v1_ListNetworksRequest__Output, _tollgate_rpc_v1_ListNetworksResponse__Output>
}
