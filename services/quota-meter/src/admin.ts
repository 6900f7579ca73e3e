// biome-ignore-all lint/suspicious/noExplicitAny: gRPC call objects are untyped at this boundary
import { checkOperator, grpc, type Logger, ServiceError, type UnaryHandler } from "@tollgate/platform";
import type { Account } from "@tollgate/platform/generated/tollgate/quota/v1/Account";
import type { ApiKey } from "@tollgate/platform/generated/tollgate/quota/v1/ApiKey";
import type { CreateAccountRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/CreateAccountRequest";
import type { CreateKeyRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/CreateKeyRequest";
import type { GetAccountRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/GetAccountRequest";
import type { ListKeysRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/ListKeysRequest";
import type { RevokeKeyRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/RevokeKeyRequest";
import type { UpdateAccountRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/UpdateAccountRequest";
import type { Records } from "./db/records.ts";
import type { KeySnapshot } from "./key-snapshot.ts";
import { displayPrefix, generateApiKey, type KeyHasher, newAccountId, newKeyId } from "./keys.ts";
import {
  ACCOUNT_STATUSES,
  type AccountPatch,
  type AccountRecord,
  isAccountStatus,
  type KeyRecord,
  type QuotaStore,
} from "./store/types.ts";

export interface AdminDeps {
  /** The system of record (PostgreSQL): written first, read by every admin call. */
  records: Records;
  /** The hot copy (Redis): written inside the same transaction, after the record. */
  store: QuotaStore;
  hasher: KeyHasher;
  snapshot: KeySnapshot;
  now: () => number;
  logger: Logger;
  operatorToken: string | undefined;
  defaults: { dailyLimit: number; monthlyLimit: number };
}

const MAX_LIMIT = 1e12;

function fail(code: grpc.status, name: string, message: string): never {
  throw new ServiceError(code, name, message);
}

function toAccount(a: AccountRecord): Account {
  return {
    id: a.id,
    name: a.name,
    status: a.status,
    dailyLimit: a.dailyLimit,
    monthlyLimit: a.monthlyLimit,
    burstPerSecond: a.burstPerSecond,
    createdAt: a.createdAt,
  };
}

function toApiKey(k: KeyRecord): ApiKey {
  return {
    id: k.id,
    accountId: k.accountId,
    prefix: k.prefix,
    createdAt: k.createdAt,
    revokedAt: k.revokedAt,
    lastUsedAt: k.lastUsedAt,
  };
}

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

function requireId(value: string, field: string): string {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(value)) {
    fail(grpc.status.INVALID_ARGUMENT, "invalid_argument", `${field} is required`);
  }
  return value;
}

export function createAdminHandlers(deps: AdminDeps): Record<string, UnaryHandler<any, any>> {
  const { records, store, logger } = deps;
  const nowIso = () => new Date(deps.now()).toISOString();

  // Admin calls are rare; a database or Redis failure is simply UNAVAILABLE (never fail-open).
  // A write is one transaction around both: when Redis refuses, PostgreSQL rolls back, so the
  // operator's retry never makes a second account or key.
  async function guarded<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof ServiceError) throw err;
      logger.warn({ err }, "admin call failed on PostgreSQL or Redis");
      throw new ServiceError(
        grpc.status.UNAVAILABLE,
        "service_unavailable",
        "quota records unavailable (PostgreSQL or Redis); retry",
      );
    }
  }

  async function mustGetAccount(id: string): Promise<AccountRecord> {
    const account = await records.getAccount(requireId(id, "account_id"));
    if (!account) fail(grpc.status.NOT_FOUND, "not_found", `no account ${id}`);
    return account;
  }

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
      const account = await mustGetAccount(req.accountId);
      const secret = generateApiKey();
      const hash = deps.hasher(secret);
      const key: KeyRecord = {
        id: newKeyId(),
        accountId: account.id,
        prefix: displayPrefix(secret),
        createdAt: nowIso(),
        revokedAt: "",
        lastUsedAt: "",
      };
      const created = await records.createKey(key, hash, async (owner) => {
        // The account's hot copy may be missing (a seed still running): write it with the key.
        await store.createAccount(owner);
        if (!(await store.createKey(key, hash))) throw new Error("the key's account has no hot copy");
      });
      if (!created) fail(grpc.status.NOT_FOUND, "not_found", `no account ${account.id}`);
      deps.snapshot.remember({ hash, keyId: key.id, accountId: account.id, status: account.status });
      logger.info({ accountId: account.id, keyId: key.id }, "key created");
      // The secret leaves here once and is never stored or logged.
      return { key: toApiKey(key), secret };
    },

    async ListKeys(req: ListKeysRequest__Output) {
      const account = await mustGetAccount(req.accountId);
      return { keys: (await records.listKeys(account.id)).map(toApiKey) };
    },

    async RevokeKey(req: RevokeKeyRequest__Output) {
      const accountId = requireId(req.accountId, "account_id");
      const keyId = requireId(req.keyId, "key_id");
      const key = await records.revokeKey(accountId, keyId, nowIso(), async (revoked) => {
        await store.revokeKey(accountId, keyId, revoked.revokedAt);
      });
      if (key) {
        // Once more after the commit: a re-seed that read the key while it was live cannot have
        // written it back after this (seeder.ts re-applies revocations it may have raced, too).
        await store.revokeKey(accountId, keyId, key.revokedAt).catch(() => undefined);
      }
      if (!key) fail(grpc.status.NOT_FOUND, "not_found", `no key ${req.keyId} on account ${req.accountId}`);
      deps.snapshot.forgetKey(key.id);
      logger.info({ accountId: key.accountId, keyId: key.id }, "key revoked");
      return { key: toApiKey(key) };
    },
  };

  return Object.fromEntries(
    Object.entries(handlers).map(([method, handler]) => [
      method,
      async (req: any, call: grpc.ServerUnaryCall<any, any>) => {
        checkOperator(call.metadata, deps.operatorToken);
        return guarded(() => (handler as (r: any) => Promise<unknown>)(req));
      },
    ]),
  );
}
