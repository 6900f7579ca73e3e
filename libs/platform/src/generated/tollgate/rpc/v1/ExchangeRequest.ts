// Original file: ../../proto/tollgate/rpc/v1/rpc_proxy.proto

import type { ExecuteRequest as _tollgate_rpc_v1_ExecuteRequest, ExecuteRequest__Output as _tollgate_rpc_v1_ExecuteRequest__Output } from '../../../tollgate/rpc/v1/ExecuteRequest.ts';
import type { ExchangeRequest as _tollgate_rpc_v1_ExchangeRequest, ExchangeRequest__Output as _tollgate_rpc_v1_ExchangeRequest__Output } from '../../../tollgate/rpc/v1/ExchangeRequest.ts';
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
  /**
   * More calls sent in the same message, each with its own id, timeout and call (their own `more`
   * is empty). Sent only on a stream whose server announced `tollgate-exchange-batch` in its
   * initial metadata; a caller sends the calls it makes within one turn of its event loop together.
   */
  'more'?: (_tollgate_rpc_v1_ExchangeRequest)[];
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
  /**
   * More calls sent in the same message, each with its own id, timeout and call (their own `more`
   * is empty). Sent only on a stream whose server announced `tollgate-exchange-batch` in its
   * initial metadata; a caller sends the calls it makes within one turn of its event loop together.
   */
  'more': (_tollgate_rpc_v1_ExchangeRequest__Output)[];
  'call'?: "execute";
}
