// Original file: ../../proto/tollgate/rpc/v1/rpc_proxy.proto


export interface ListNetworksRequest {
}

export interface ListNetworksRequest__Output {
}
