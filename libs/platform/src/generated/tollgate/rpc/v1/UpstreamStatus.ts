// Original file: ../../proto/tollgate/rpc/v1/rpc_proxy.proto

import type { Long } from '@grpc/proto-loader';

export interface UpstreamStatus {
  /**
   * The upstream's label (never its URL, which may hold a key).
   */
  'label'?: (string);
  'healthy'?: (boolean);
  /**
   * Circuit breaker state: "closed", "open" or "half_open".
   */
  'breaker'?: (string);
  /**
   * Last observed head block number.
   */
  'headBlock'?: (number | string | Long);
  /**
   * Blocks behind the network's consistent head (the highest block a majority of its upstreams reached).
   */
  'lagBlocks'?: (number | string | Long);
}

export interface UpstreamStatus__Output {
  /**
   * The upstream's label (never its URL, which may hold a key).
   */
  'label': (string);
  'healthy': (boolean);
  /**
   * Circuit breaker state: "closed", "open" or "half_open".
   */
  'breaker': (string);
  /**
   * Last observed head block number.
   */
  'headBlock': (number);
  /**
   * Blocks behind the network's consistent head (the highest block a majority of its upstreams reached).
   */
  'lagBlocks': (number);
}
