// What the operator's admin API (admin.ts) and a signed-in user's account API (account.ts) both
// do to accounts and keys: written once, so both paths write PostgreSQL, the hot copy and the
// fail-open snapshot the same way.
import { grpc, type Logger, ServiceError } from "@tollgate/platform";
import type { Account } from "@tollgate/platform/generated/tollgate/quota/v1/Account";
import type { ApiKey } from "@tollgate/platform/generated/tollgate/quota/v1/ApiKey";
import { runAgainIfLost } from "@tollgate/platform/redis";
import type { Records } from "./db/records.ts";
import type { KeySnapshot } from "./key-snapshot.ts";
import { displayPrefix, generateApiKey, type KeyHasher, newKeyId } from "./keys.ts";
import type { AccountRecord, KeyRecord, QuotaStore } from "./store/types.ts";

/**
 * How long a hot write whose Redis answer was lost waits for Redis to run it again: well inside the
 * dashboard's 3 s deadline for a key replace (Redis' reconnect starts at 50 ms), so the revocation
 * does not land after the caller has given up.
 */
const HOT_WRITE_READ_BACK_MS = 1_000;

export interface KeyOpsDeps {
  /** The system of record (PostgreSQL): written first, read by every admin call. */
  records: Records;
  /** The hot copy (Redis): written inside the same transaction, after the record. */
  store: QuotaStore;
  hasher: KeyHasher;
  snapshot: KeySnapshot;
  now: () => number;
  logger: Logger;
}

export function fail(code: grpc.status, name: string, message: string): never {
  throw new ServiceError(code, name, message);
}

export function toAccount(a: AccountRecord): Account {
  return {
    id: a.id,
    name: a.name,
    status: a.status,
    dailyLimit: a.dailyLimit,
    monthlyLimit: a.monthlyLimit,
    burstPerSecond: a.burstPerSecond,
    createdAt: a.createdAt,
    plan: a.plan,
    creditsOnly: a.creditsOnly === true,
  };
}

export function toApiKey(k: KeyRecord): ApiKey {
  return {
    id: k.id,
    accountId: k.accountId,
    prefix: k.prefix,
    createdAt: k.createdAt,
    revokedAt: k.revokedAt,
    lastUsedAt: k.lastUsedAt,
  };
}

export function requireId(value: string, field: string): string {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(value)) {
    fail(grpc.status.INVALID_ARGUMENT, "invalid_argument", `${field} is required`);
  }
  return value;
}

export function createKeyOps(deps: KeyOpsDeps) {
  const { records, store, logger } = deps;
  const nowIso = () => new Date(deps.now()).toISOString();

  return {
    nowIso,

    // Calls that write are rare; a database or Redis failure is simply UNAVAILABLE (never
    // fail-open). A write is one transaction around both: when Redis refuses, PostgreSQL rolls
    // back, so a retry never makes a second account or key.
    async guarded<T>(fn: () => Promise<T>): Promise<T> {
      try {
        return await fn();
      } catch (err) {
        if (err instanceof ServiceError) throw err;
        logger.warn({ err }, "account call failed on PostgreSQL or Redis");
        throw new ServiceError(
          grpc.status.UNAVAILABLE,
          "service_unavailable",
          "quota records unavailable (PostgreSQL or Redis); retry",
        );
      }
    },

    async mustGetAccount(id: string): Promise<AccountRecord> {
      const account = await records.getAccount(requireId(id, "account_id"));
      if (!account) fail(grpc.status.NOT_FOUND, "not_found", `no account ${id}`);
      return account;
    },

    /** A new key of the account; the secret leaves here once and is never stored or logged. */
    async createKey(account: AccountRecord): Promise<{ key: KeyRecord; secret: string }> {
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
      return { key, secret };
    },

    /** Revokes a key of this account only: another account's key is NOT_FOUND, as if absent. */
    async revokeKey(accountIdIn: string, keyIdIn: string): Promise<KeyRecord> {
      const accountId = requireId(accountIdIn, "account_id");
      const keyId = requireId(keyIdIn, "key_id");
      const key = await records.revokeKey(accountId, keyId, nowIso(), async (revoked) => {
        // Run again should Redis' answer be lost (it may have revoked the key): failed, the records
        // would roll back and show live a key Redis refuses. Idempotent: a revoked key stays as is.
        await runAgainIfLost(
          () => store.revokeKey(accountId, keyId, revoked.revokedAt),
          HOT_WRITE_READ_BACK_MS,
        );
      });
      if (key) {
        // Once more after the commit: a re-seed that read the key while it was live cannot have
        // written it back after this (seeder.ts re-applies revocations it may have raced, too).
        await store.revokeKey(accountId, keyId, key.revokedAt).catch(() => undefined);
      }
      if (!key) fail(grpc.status.NOT_FOUND, "not_found", `no key ${keyIdIn} on account ${accountIdIn}`);
      deps.snapshot.forgetKey(key.id);
      logger.info({ accountId: key.accountId, keyId: key.id }, "key revoked");
      return key;
    },
  };
}
