// Reaching the services' admin APIs: where they are (QUOTA_METER_ADDR, SETTLEMENT_WORKER_ADDR), the
// operator token, and gRPC failures told as what the operator should check.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { CallError, defaultGrpcAddr, grpc, readSecret } from "@tollgate/platform";
import { type AdminClient, createAdminClient } from "./clients/quota-admin.ts";
import { createLedgerClient, type LedgerClient } from "./clients/settlement-admin.ts";
import { Failure } from "./errors.ts";

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));

function operatorToken(): string {
  const token = readSecret("OPERATOR_TOKEN");
  if (token) return token;
  const file = `${REPO_ROOT}.tollgate/operator-token`;
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  throw new Failure(
    "no operator token: set OPERATOR_TOKEN (or OPERATOR_TOKEN_FILE), or start the local stack with `pnpm start`, which writes .tollgate/operator-token",
  );
}

function explain(err: unknown, addr: string, service: string, env: string): Failure {
  if (!(err instanceof CallError)) return new Failure(err instanceof Error ? err.message : String(err));
  const { grpcCode, message } = err.failure;
  switch (grpcCode) {
    case grpc.status.UNAVAILABLE:
      if (err.failure.code === "service_unavailable") return new Failure(message);
      return new Failure(`cannot reach ${service} at ${addr}: is it running? (set ${env})`);
    case grpc.status.DEADLINE_EXCEEDED:
      return new Failure(`cannot reach ${service} at ${addr}: is it running? (set ${env})`);
    case grpc.status.UNAUTHENTICATED:
      return new Failure(
        "the operator token was refused: check OPERATOR_TOKEN (or .tollgate/operator-token) matches the service's",
      );
    default:
      return new Failure(message);
  }
}

/** Runs `fn` against quota-meter's admin API (accounts, keys). */
export async function withQuotaAdmin(fn: (admin: AdminClient) => Promise<unknown>): Promise<unknown> {
  const addr = process.env.QUOTA_METER_ADDR || defaultGrpcAddr("quota-meter");
  const admin = createAdminClient(addr, operatorToken(), 5_000);
  try {
    return await fn(admin);
  } catch (err) {
    throw explain(err, addr, "quota-meter", "QUOTA_METER_ADDR");
  } finally {
    admin.close();
  }
}

/** Runs `fn` against the settlement worker's admin API (the ledger). */
export async function withLedger(fn: (ledger: LedgerClient) => Promise<unknown>): Promise<unknown> {
  const addr = process.env.SETTLEMENT_WORKER_ADDR || defaultGrpcAddr("settlement-worker");
  const ledger = createLedgerClient(addr, operatorToken());
  try {
    return await fn(ledger);
  } catch (err) {
    throw explain(err, addr, "the settlement worker", "SETTLEMENT_WORKER_ADDR");
  } finally {
    ledger.close();
  }
}
