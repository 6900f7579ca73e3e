import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { CallStatus as _tollgate_mesh_v1_CallStatus, CallStatus__Output as _tollgate_mesh_v1_CallStatus__Output } from './tollgate/mesh/v1/CallStatus.ts';
import type { ExchangeRequest as _tollgate_rpc_v1_ExchangeRequest, ExchangeRequest__Output as _tollgate_rpc_v1_ExchangeRequest__Output } from './tollgate/rpc/v1/ExchangeRequest.ts';
import type { ExchangeResponse as _tollgate_rpc_v1_ExchangeResponse, ExchangeResponse__Output as _tollgate_rpc_v1_ExchangeResponse__Output } from './tollgate/rpc/v1/ExchangeResponse.ts';
import type { ExecuteRequest as _tollgate_rpc_v1_ExecuteRequest, ExecuteRequest__Output as _tollgate_rpc_v1_ExecuteRequest__Output } from './tollgate/rpc/v1/ExecuteRequest.ts';
import type { ExecuteResponse as _tollgate_rpc_v1_ExecuteResponse, ExecuteResponse__Output as _tollgate_rpc_v1_ExecuteResponse__Output } from './tollgate/rpc/v1/ExecuteResponse.ts';
import type { ListNetworksRequest as _tollgate_rpc_v1_ListNetworksRequest, ListNetworksRequest__Output as _tollgate_rpc_v1_ListNetworksRequest__Output } from './tollgate/rpc/v1/ListNetworksRequest.ts';
import type { ListNetworksResponse as _tollgate_rpc_v1_ListNetworksResponse, ListNetworksResponse__Output as _tollgate_rpc_v1_ListNetworksResponse__Output } from './tollgate/rpc/v1/ListNetworksResponse.ts';
import type { NetworkStatus as _tollgate_rpc_v1_NetworkStatus, NetworkStatus__Output as _tollgate_rpc_v1_NetworkStatus__Output } from './tollgate/rpc/v1/NetworkStatus.ts';
import type { QuorumPolicy as _tollgate_rpc_v1_QuorumPolicy, QuorumPolicy__Output as _tollgate_rpc_v1_QuorumPolicy__Output } from './tollgate/rpc/v1/QuorumPolicy.ts';
import type { RpcProxyServiceClient as _tollgate_rpc_v1_RpcProxyServiceClient, RpcProxyServiceDefinition as _tollgate_rpc_v1_RpcProxyServiceDefinition } from './tollgate/rpc/v1/RpcProxyService.ts';
import type { UpstreamStatus as _tollgate_rpc_v1_UpstreamStatus, UpstreamStatus__Output as _tollgate_rpc_v1_UpstreamStatus__Output } from './tollgate/rpc/v1/UpstreamStatus.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  tollgate: {
    mesh: {
      v1: {
        CallStatus: MessageTypeDefinition<_tollgate_mesh_v1_CallStatus, _tollgate_mesh_v1_CallStatus__Output>
      }
    }
    rpc: {
      v1: {
        ExchangeRequest: MessageTypeDefinition<_tollgate_rpc_v1_ExchangeRequest, _tollgate_rpc_v1_ExchangeRequest__Output>
        ExchangeResponse: MessageTypeDefinition<_tollgate_rpc_v1_ExchangeResponse, _tollgate_rpc_v1_ExchangeResponse__Output>
        ExecuteRequest: MessageTypeDefinition<_tollgate_rpc_v1_ExecuteRequest, _tollgate_rpc_v1_ExecuteRequest__Output>
        ExecuteResponse: MessageTypeDefinition<_tollgate_rpc_v1_ExecuteResponse, _tollgate_rpc_v1_ExecuteResponse__Output>
        ListNetworksRequest: MessageTypeDefinition<_tollgate_rpc_v1_ListNetworksRequest, _tollgate_rpc_v1_ListNetworksRequest__Output>
        ListNetworksResponse: MessageTypeDefinition<_tollgate_rpc_v1_ListNetworksResponse, _tollgate_rpc_v1_ListNetworksResponse__Output>
        NetworkStatus: MessageTypeDefinition<_tollgate_rpc_v1_NetworkStatus, _tollgate_rpc_v1_NetworkStatus__Output>
        QuorumPolicy: MessageTypeDefinition<_tollgate_rpc_v1_QuorumPolicy, _tollgate_rpc_v1_QuorumPolicy__Output>
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
        RpcProxyService: SubtypeConstructor<typeof grpc.Client, _tollgate_rpc_v1_RpcProxyServiceClient> & { service: _tollgate_rpc_v1_RpcProxyServiceDefinition }
        UpstreamStatus: MessageTypeDefinition<_tollgate_rpc_v1_UpstreamStatus, _tollgate_rpc_v1_UpstreamStatus__Output>
      }
    }
  }
}

