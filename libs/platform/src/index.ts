export * from "./env.ts";
export * from "./grpc.ts";
export * from "./logger.ts";
export * from "./metrics.ts";
export * from "./secrets.ts";
