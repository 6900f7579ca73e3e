// The operator's credential on the admin APIs (quota-meter's QuotaAdminService, the settlement
// worker's SettlementAdminService): `authorization: Bearer <OPERATOR_TOKEN>` metadata, compared in
// constant time. Not a mesh token: no service calls an admin API, only the operator does.
import { createHash, timingSafeEqual } from "node:crypto";
import { grpc, ServiceError } from "./grpc.ts";

/** Constant-time comparison of a presented operator token with the configured one. */
function tokenMatches(presented: string, expected: string): boolean {
  // Hashing first gives equal lengths, so neither the content nor the length leaks.
  const a = createHash("sha256").update(presented).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

/** Refuses an admin call without the configured operator token (none configured: every call). */
export function checkOperator(metadata: grpc.Metadata, token: string | undefined): void {
  if (!token) {
    throw new ServiceError(
      grpc.status.PERMISSION_DENIED,
      "admin_disabled",
      "the admin API is disabled: no operator token is configured (OPERATOR_TOKEN)",
    );
  }
  const header = metadata.get("authorization")[0];
  const presented = typeof header === "string" ? /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined;
  if (!presented || !tokenMatches(presented, token)) {
    throw new ServiceError(
      grpc.status.UNAUTHENTICATED,
      "unauthenticated",
      "a valid operator token is required",
    );
  }
}

/** The call options an operator's client sends: the token as `authorization: Bearer` (none: no header). */
export function operatorCall(token: string | undefined): { metadata: grpc.Metadata } {
  const metadata = new grpc.Metadata();
  if (token !== undefined) metadata.set("authorization", `Bearer ${token}`);
  return { metadata };
}
