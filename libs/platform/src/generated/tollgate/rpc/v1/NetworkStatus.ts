// Original file: ../../proto/tollgate/rpc/v1/rpc_proxy.proto

import type { UpstreamStatus as _tollgate_rpc_v1_UpstreamStatus, UpstreamStatus__Output as _tollgate_rpc_v1_UpstreamStatus__Output } from '../../../tollgate/rpc/v1/UpstreamStatus.ts';
import type { QuorumPolicy as _tollgate_rpc_v1_QuorumPolicy, QuorumPolicy__Output as _tollgate_rpc_v1_QuorumPolicy__Output } from '../../../tollgate/rpc/v1/QuorumPolicy.ts';
import type { Long } from '@grpc/proto-loader';

export interface NetworkStatus {
  'name'?: (string);
  /**
   * EIP-155 chain id.
   */
  'chainId'?: (number | string | Long);
  'upstreams'?: (_tollgate_rpc_v1_UpstreamStatus)[];
  /**
   * Quorum reads (rpc-proxy's CONSENSUS_<NETWORK>); unset: every call is answered by one node.
   */
  'quorum'?: (_tollgate_rpc_v1_QuorumPolicy | null);
}

export interface NetworkStatus__Output {
  'name': (string);
  /**
   * EIP-155 chain id.
   */
  'chainId': (number);
  'upstreams': (_tollgate_rpc_v1_UpstreamStatus__Output)[];
  /**
   * Quorum reads (rpc-proxy's CONSENSUS_<NETWORK>); unset: every call is answered by one node.
   */
  'quorum': (_tollgate_rpc_v1_QuorumPolicy__Output | null);
}
