// Original file: ../../proto/tollgate/rpc/v1/rpc_proxy.proto

import type { NetworkStatus as _tollgate_rpc_v1_NetworkStatus, NetworkStatus__Output as _tollgate_rpc_v1_NetworkStatus__Output } from '../../../tollgate/rpc/v1/NetworkStatus.ts';

export interface ListNetworksResponse {
  'networks'?: (_tollgate_rpc_v1_NetworkStatus)[];
}

export interface ListNetworksResponse__Output {
  'networks': (_tollgate_rpc_v1_NetworkStatus__Output)[];
}
