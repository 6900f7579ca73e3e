export { loadConfig, type NetworkConfig, type RpcProxyConfig, upstreamsEnvName } from "./config.ts";
export { type RpcProxyHandle, startRpcProxy } from "./server.ts";
