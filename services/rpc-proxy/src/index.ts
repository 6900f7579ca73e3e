export { loadConfig, networkConfig, type RpcProxyConfig } from "./config.ts";
export { consensusEnvName, upstreamsEnvName } from "./env.ts";
export { type RpcProxyHandle, startRpcProxy } from "./server.ts";
