// How a failure crosses a gRPC hop: the server throws a ServiceError (a status and a catalog error
// code, sent in trailing metadata); the caller reads it back as a CallFailure inside a CallError.
import * as grpc from "@grpc/grpc-js";
import { ERROR_CODE_KEY, ERROR_DETAIL_KEY } from "./grpc-metadata.ts";
import type { Logger } from "./logger.ts";

/**
 * An error a handler throws on purpose: a gRPC status plus the public catalog error
 * code the gateway turns into the HTTP status and envelope.
 */
export class ServiceError extends Error {
  readonly grpcCode: grpc.status;
  readonly code: string;
  readonly detail: Record<string, unknown> | undefined;
  constructor(grpcCode: grpc.status, code: string, message: string, detail?: Record<string, unknown>) {
    super(message);
    this.grpcCode = grpcCode;
    this.code = code;
    this.detail = detail;
  }
}

/** The status a handler's failure ends its call with: its own for a ServiceError, else INTERNAL (logged). */
export function toStatus(err: unknown, logger: Logger, method: string): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  if (err instanceof ServiceError) {
    metadata.set(ERROR_CODE_KEY, err.code);
    if (err.detail) metadata.set(ERROR_DETAIL_KEY, JSON.stringify(err.detail));
    return { code: err.grpcCode, details: err.message, metadata };
  }
  logger.error({ err, method }, "unhandled error in gRPC handler");
  metadata.set(ERROR_CODE_KEY, "internal_error");
  return { code: grpc.status.INTERNAL, details: "internal error", metadata };
}

/** What a failed call looks like to the caller, whichever side failed. */
export interface CallFailure {
  grpcCode: grpc.status;
  /** Catalog error code from the server, when it sent one. */
  code: string | undefined;
  message: string;
  detail: Record<string, unknown> | undefined;
}

export function readCallFailure(err: unknown): CallFailure {
  const e = err as Partial<grpc.ServiceError>;
  const code = e.metadata?.get(ERROR_CODE_KEY)[0];
  const detailRaw = e.metadata?.get(ERROR_DETAIL_KEY)[0];
  let detail: Record<string, unknown> | undefined;
  if (typeof detailRaw === "string") {
    try {
      detail = JSON.parse(detailRaw);
    } catch {
      detail = undefined;
    }
  }
  return {
    grpcCode: e.code ?? grpc.status.UNKNOWN,
    code: typeof code === "string" ? code : undefined,
    message: e.details ?? e.message ?? "call failed",
    detail,
  };
}

export class CallError extends Error {
  readonly failure: CallFailure;
  constructor(failure: CallFailure) {
    super(failure.message);
    this.failure = failure;
  }
}
