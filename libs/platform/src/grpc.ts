// The platform's gRPC, in one import: grpc-js itself, the contracts (grpc-contracts.ts), the server
// (grpc-server.ts), clients (grpc-client.ts), failures across a hop (grpc-errors.ts), health checks
// (grpc-health.ts) and the Exchange transport's tuning (grpc-exchange.ts).
import * as grpc from "@grpc/grpc-js";

export { createClient, type MeshClientOptions } from "./grpc-client.ts";
export { contracts } from "./grpc-contracts.ts";
export { CallError, type CallFailure, ServiceError } from "./grpc-errors.ts";
export { connectionGraceMs, EXCHANGE_BATCH_KEY, EXCHANGE_CALL_MAX_MS } from "./grpc-exchange.ts";
export { checkHealth } from "./grpc-health.ts";
export { type GrpcServerHandle, startGrpcServer, type UnaryHandler } from "./grpc-server.ts";
export { grpc };
