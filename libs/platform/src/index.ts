export * from "./env.ts";
export * from "./grpc.ts";
export * from "./logger.ts";
export * from "./mesh-auth.ts";
export * from "./metrics.ts";
export * from "./operator.ts";
export * from "./redact.ts";
export * from "./secrets.ts";
