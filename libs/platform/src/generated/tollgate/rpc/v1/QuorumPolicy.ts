// Original file: ../../proto/tollgate/rpc/v1/rpc_proxy.proto


/**
 * The node methods of a network answered only when k of the n upstreams asked give the same answer
 * at the same pinned block (else upstream_disagreement).
 */
export interface QuorumPolicy {
  'methods'?: (string)[];
  'k'?: (number);
  'n'?: (number);
}

/**
 * The node methods of a network answered only when k of the n upstreams asked give the same answer
 * at the same pinned block (else upstream_disagreement).
 */
export interface QuorumPolicy__Output {
  'methods': (string)[];
  'k': (number);
  'n': (number);
}
