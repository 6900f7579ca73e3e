// biome-ignore-all lint/suspicious/noExplicitAny: gRPC call objects are untyped at this boundary
import { checkOperator, grpc, type UnaryHandler } from "@tollgate/platform";
import type { CreateAccountRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/CreateAccountRequest";
import type { CreateKeyRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/CreateKeyRequest";
import type { GetAccountRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/GetAccountRequest";
import type { ListKeysRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/ListKeysRequest";
import type { RevokeKeyRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/RevokeKeyRequest";
import type { UpdateAccountRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/UpdateAccountRequest";
import { createKeyOps, fail, type KeyOpsDeps, requireId, toAccount, toApiKey } from "./key-ops.ts";
import { newAccountId } from "./keys.ts";
import { ACCOUNT_STATUSES, type AccountPatch, type AccountRecord, isAccountStatus } from "./store/types.ts";

export interface AdminDeps extends KeyOpsDeps {
  operatorToken: string | undefined;
  defaults: { dailyLimit: number; monthlyLimit: number };
}

const MAX_LIMIT = 1e12;

/** proto3 `optional` fields arrive with their oneof marker (`_name`) set only when present. */
function optional<T>(req: Record<string, unknown>, field: string): T | undefined {
  return req[`_${field}`] === field ? (req[field] as T) : undefined;
}

function limit(value: number | undefined, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value < 0 || value > MAX_LIMIT) {
    fail(
      grpc.status.INVALID_ARGUMENT,
      "invalid_argument",
      `${field}: expected an integer from 0 to ${MAX_LIMIT}`,
    );
  }
  return value;
}

export function createAdminHandlers(deps: AdminDeps): Record<string, UnaryHandler<any, any>> {
  const { records, store, logger } = deps;
  const ops = createKeyOps(deps);
  const { nowIso, mustGetAccount } = ops;

  const handlers = {
    async CreateAccount(req: CreateAccountRequest__Output) {
      const name = req.name.trim();
      if (!name || name.length > 200) {
        fail(grpc.status.INVALID_ARGUMENT, "invalid_argument", "name is required (at most 200 characters)");
      }
      const r = req as unknown as Record<string, unknown>;
      const account: AccountRecord = {
        id: newAccountId(),
        name,
        status: "active",
        dailyLimit: limit(optional<number>(r, "dailyLimit"), "daily_limit") ?? deps.defaults.dailyLimit,
        monthlyLimit:
          limit(optional<number>(r, "monthlyLimit"), "monthly_limit") ?? deps.defaults.monthlyLimit,
        burstPerSecond: limit(optional<number>(r, "burstPerSecond"), "burst_per_second") ?? 0,
        createdAt: nowIso(),
      };
      await records.createAccount(account, () => store.createAccount(account));
      logger.info({ accountId: account.id }, "account created");
      return { account: toAccount(account) };
    },

    async GetAccount(req: GetAccountRequest__Output) {
      return { account: toAccount(await mustGetAccount(req.accountId)) };
    },

    async UpdateAccount(req: UpdateAccountRequest__Output) {
      const r = req as unknown as Record<string, unknown>;
      const status = optional<string>(r, "status");
      if (status !== undefined && !isAccountStatus(status)) {
        fail(
          grpc.status.INVALID_ARGUMENT,
          "invalid_argument",
          `status: expected one of ${ACCOUNT_STATUSES.join(", ")}`,
        );
      }
      const patch: AccountPatch = {};
      if (status !== undefined) patch.status = status;
      const daily = limit(optional<number>(r, "dailyLimit"), "daily_limit");
      const monthly = limit(optional<number>(r, "monthlyLimit"), "monthly_limit");
      const burst = limit(optional<number>(r, "burstPerSecond"), "burst_per_second");
      if (daily !== undefined) patch.dailyLimit = daily;
      if (monthly !== undefined) patch.monthlyLimit = monthly;
      if (burst !== undefined) patch.burstPerSecond = burst;
      const account = await records.updateAccount(
        requireId(req.accountId, "account_id"),
        patch,
        nowIso(),
        (updated) => store.createAccount(updated),
      );
      if (!account) fail(grpc.status.NOT_FOUND, "not_found", `no account ${req.accountId}`);
      deps.snapshot.setAccountStatus(account.id, account.status);
      logger.info({ accountId: account.id, ...patch }, "account updated");
      return { account: toAccount(account) };
    },

    async CreateKey(req: CreateKeyRequest__Output) {
      const { key, secret } = await ops.createKey(await mustGetAccount(req.accountId));
      return { key: toApiKey(key), secret };
    },

    async ListKeys(req: ListKeysRequest__Output) {
      const account = await mustGetAccount(req.accountId);
      return { keys: (await records.listKeys(account.id)).map(toApiKey) };
    },

    async RevokeKey(req: RevokeKeyRequest__Output) {
      return { key: toApiKey(await ops.revokeKey(req.accountId, req.keyId)) };
    },
  };

  return Object.fromEntries(
    Object.entries(handlers).map(([method, handler]) => [
      method,
      async (req: any, call: grpc.ServerUnaryCall<any, any>) => {
        checkOperator(call.metadata, deps.operatorToken);
        return ops.guarded(() => (handler as (r: any) => Promise<unknown>)(req));
      },
    ]),
  );
}
