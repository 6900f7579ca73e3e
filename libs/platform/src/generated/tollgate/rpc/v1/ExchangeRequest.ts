// Original file: ../../proto/tollgate/rpc/v1/rpc_proxy.proto

import type { ExecuteRequest as _tollgate_rpc_v1_ExecuteRequest, ExecuteRequest__Output as _tollgate_rpc_v1_ExecuteRequest__Output } from '../../../tollgate/rpc/v1/ExecuteRequest.ts';
import type { Long } from '@grpc/proto-loader';

export interface ExchangeRequest {
  /**
   * The caller's number for this call on this stream, unique among its unanswered calls.
   */
  'id'?: (number | string | Long);
  /**
   * How long the caller waits for the answer, in milliseconds: the unary call's deadline.
   */
  'timeoutMs'?: (number);
  'execute'?: (_tollgate_rpc_v1_ExecuteRequest | null);
  'call'?: "execute";
}

export interface ExchangeRequest__Output {
  /**
   * The caller's number for this call on this stream, unique among its unanswered calls.
   */
  'id': (number);
  /**
   * How long the caller waits for the answer, in milliseconds: the unary call's deadline.
   */
  'timeoutMs': (number);
  'execute'?: (_tollgate_rpc_v1_ExecuteRequest__Output | null);
  'call'?: "execute";
}
