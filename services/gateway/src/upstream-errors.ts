import { type ErrorCode, isErrorCode } from "@tollgate/catalog";
import { type CallFailure, grpc } from "@tollgate/platform";

/**
 * Turns a failed internal call into a public error. Services name a catalog code;
 * when they could not (the hop itself failed), the gRPC status decides.
 */
export function publicError(failure: CallFailure): {
  code: ErrorCode;
  message: string;
  extra?: Record<string, unknown>;
} {
  if (isErrorCode(failure.code)) {
    return {
      code: failure.code,
      message: failure.message,
      ...(failure.detail ? { extra: failure.detail } : {}),
    };
  }
  switch (failure.grpcCode) {
    case grpc.status.DEADLINE_EXCEEDED:
      return { code: "upstream_timeout", message: "the request did not complete in time" };
    case grpc.status.UNAVAILABLE:
      return {
        code: "service_unavailable",
        message: "an internal service is unavailable, retry with backoff",
      };
    case grpc.status.INVALID_ARGUMENT:
      return { code: "invalid_parameter", message: failure.message };
    default:
      return { code: "internal_error", message: "internal error, retry with backoff" };
  }
}
