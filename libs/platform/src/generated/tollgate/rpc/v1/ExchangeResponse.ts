// Original file: ../../proto/tollgate/rpc/v1/rpc_proxy.proto

import type { ExecuteResponse as _tollgate_rpc_v1_ExecuteResponse, ExecuteResponse__Output as _tollgate_rpc_v1_ExecuteResponse__Output } from '../../../tollgate/rpc/v1/ExecuteResponse.ts';
import type { CallStatus as _tollgate_mesh_v1_CallStatus, CallStatus__Output as _tollgate_mesh_v1_CallStatus__Output } from '../../../tollgate/mesh/v1/CallStatus.ts';
import type { ExchangeResponse as _tollgate_rpc_v1_ExchangeResponse, ExchangeResponse__Output as _tollgate_rpc_v1_ExchangeResponse__Output } from '../../../tollgate/rpc/v1/ExchangeResponse.ts';
import type { Long } from '@grpc/proto-loader';

export interface ExchangeResponse {
  /**
   * The id of the call this answers.
   */
  'id'?: (number | string | Long);
  'execute'?: (_tollgate_rpc_v1_ExecuteResponse | null);
  /**
   * The call failed as Execute would have failed.
   */
  'status'?: (_tollgate_mesh_v1_CallStatus | null);
  /**
   * More answers sent in the same message (their own `more` is empty). Sent only on a stream whose
   * caller announced `tollgate-exchange-batch` in its metadata.
   */
  'more'?: (_tollgate_rpc_v1_ExchangeResponse)[];
  'result'?: "execute"|"status";
}

export interface ExchangeResponse__Output {
  /**
   * The id of the call this answers.
   */
  'id': (number);
  'execute'?: (_tollgate_rpc_v1_ExecuteResponse__Output | null);
  /**
   * The call failed as Execute would have failed.
   */
  'status'?: (_tollgate_mesh_v1_CallStatus__Output | null);
  /**
   * More answers sent in the same message (their own `more` is empty). Sent only on a stream whose
   * caller announced `tollgate-exchange-batch` in its metadata.
   */
  'more': (_tollgate_rpc_v1_ExchangeResponse__Output)[];
  'result'?: "execute"|"status";
}
