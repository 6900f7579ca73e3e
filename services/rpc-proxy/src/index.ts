export { loadConfig, type RpcProxyConfig } from "./config.ts";
export { upstreamsEnvName } from "./env.ts";
export { type RpcProxyHandle, startRpcProxy } from "./server.ts";
