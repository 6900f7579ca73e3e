export { loadConfig, parseConsensus, parseLimits, type RpcProxyConfig } from "./config.ts";
export { consensusEnvName, limitsEnvName, upstreamsEnvName } from "./env.ts";
export { type RpcProxyHandle, startRpcProxy } from "./server.ts";
