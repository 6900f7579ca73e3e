// Original file: ../../proto/tollgate/rpc/v1/rpc_proxy.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ExchangeRequest as _tollgate_rpc_v1_ExchangeRequest, ExchangeRequest__Output as _tollgate_rpc_v1_ExchangeRequest__Output } from '../../../tollgate/rpc/v1/ExchangeRequest.ts';
import type { ExchangeResponse as _tollgate_rpc_v1_ExchangeResponse, ExchangeResponse__Output as _tollgate_rpc_v1_ExchangeResponse__Output } from '../../../tollgate/rpc/v1/ExchangeResponse.ts';
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
   * Exchange carries Execute calls as messages on one long-lived stream
   * (tollgate/mesh/v1/exchange.proto): the same handler, answers and errors as Execute, without a
   * new HTTP/2 stream per call. A call whose stream broke before its answer fails UNAVAILABLE.
   */
  Exchange(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_tollgate_rpc_v1_ExchangeRequest, _tollgate_rpc_v1_ExchangeResponse__Output>;
  Exchange(options?: grpc.CallOptions): grpc.ClientDuplexStream<_tollgate_rpc_v1_ExchangeRequest, _tollgate_rpc_v1_ExchangeResponse__Output>;
  /**
   * Exchange carries Execute calls as messages on one long-lived stream
   * (tollgate/mesh/v1/exchange.proto): the same handler, answers and errors as Execute, without a
   * new HTTP/2 stream per call. A call whose stream broke before its answer fails UNAVAILABLE.
   */
  exchange(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_tollgate_rpc_v1_ExchangeRequest, _tollgate_rpc_v1_ExchangeResponse__Output>;
  exchange(options?: grpc.CallOptions): grpc.ClientDuplexStream<_tollgate_rpc_v1_ExchangeRequest, _tollgate_rpc_v1_ExchangeResponse__Output>;
  
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
   * Exchange carries Execute calls as messages on one long-lived stream
   * (tollgate/mesh/v1/exchange.proto): the same handler, answers and errors as Execute, without a
   * new HTTP/2 stream per call. A call whose stream broke before its answer fails UNAVAILABLE.
   */
  Exchange: grpc.handleBidiStreamingCall<_tollgate_rpc_v1_ExchangeRequest__Output, _tollgate_rpc_v1_ExchangeResponse>;
  
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
  Exchange: MethodDefinition<_tollgate_rpc_v1_ExchangeRequest, _tollgate_rpc_v1_ExchangeResponse, _tollgate_rpc_v1_ExchangeRequest__Output, _tollgate_rpc_v1_ExchangeResponse__Output>
  Execute: MethodDefinition<_tollgate_rpc_v1_ExecuteRequest, _tollgate_rpc_v1_ExecuteResponse, _tollgate_rpc_v1_ExecuteRequest__Output, _tollgate_rpc_v1_ExecuteResponse__Output>
  ListNetworks: MethodDefinition<_tollgate_rpc_v1_ListNetworksRequest, _tollgate_rpc_v1_ListNetworksResponse, _tollgate_rpc_v1_ListNetworksRequest__Output, _tollgate_rpc_v1_ListNetworksResponse__Output>
}
