// AccountService: what a signed-in user may do to their own account (the dashboard calls it with
// its mesh token, after verifying the user's wallet signature). Every key operation is scoped by
// the account: records.revokeKey matches (account, key), so another account's key is NOT_FOUND.
// biome-ignore-all lint/suspicious/noExplicitAny: gRPC call objects are untyped at this boundary
import { ACCOUNT_KEY_LIMITS } from "@tollgate/catalog";
import { grpc, type UnaryHandler } from "@tollgate/platform";
import type { GetOwnCreditsRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/GetOwnCreditsRequest";
import type { GetOwnUsageRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/GetOwnUsageRequest";
import type { GetOwnUsageResponse } from "@tollgate/platform/generated/tollgate/quota/v1/GetOwnUsageResponse";
import type { ListOwnKeysRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/ListOwnKeysRequest";
import type { ReplaceOwnKeyRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/ReplaceOwnKeyRequest";
import type { ResolveWalletAccountRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/ResolveWalletAccountRequest";
import type { RevokeOwnKeyRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/RevokeOwnKeyRequest";
import type { Credits } from "./credits.ts";
import { createKeyOps, fail, type KeyOpsDeps, requireId, toAccount, toApiKey } from "./key-ops.ts";
import { newAccountId } from "./keys.ts";
import { quotaOf } from "./meter.ts";
import type { PlanBook } from "./plans.ts";
import type { AccountRecord } from "./store/types.ts";
import { recentDays, windowsAt } from "./windows.ts";

const { live: MAX_LIVE_KEYS, total: MAX_KEYS } = ACCOUNT_KEY_LIMITS;
export interface AccountDeps extends KeyOpsDeps {
  /** The plans; an account made at a first sign-in joins the free one. */
  plans: PlanBook;
  /** The burst guard of accounts without their own rate (what Authorize applies). */
  defaultBurst: number;
  credits: Credits;
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const DEFAULT_DAYS = 30;
const MAX_DAYS = 366;

export function createAccountHandlers(deps: AccountDeps): Record<string, UnaryHandler<any, any>> {
  const { records, store } = deps;
  const ops = createKeyOps(deps);

  /** The account, which must exist and be one the caller names (no listing, no guessing help). */
  const own = (accountId: string) => ops.mustGetAccount(accountId);

  /**
   * Self-service sign-up is free, so what one account may make is bounded: live keys (each is in
   * Redis and every gateway's fail-open snapshot) and keys in all (revoked ones stay as records).
   * Two concurrent creates may pass the count together: a bound, not an exact quota.
   */
  const roomForKey = async (accountId: string, live: boolean) => {
    const keys = await records.listKeys(accountId);
    if (live && keys.filter((k) => !k.revokedAt).length >= MAX_LIVE_KEYS) {
      fail(
        grpc.status.FAILED_PRECONDITION,
        "too_many_keys",
        `an account holds at most ${MAX_LIVE_KEYS} live keys: revoke one first`,
      );
    }
    if (keys.length >= MAX_KEYS) {
      fail(
        grpc.status.FAILED_PRECONDITION,
        "too_many_keys",
        `an account makes at most ${MAX_KEYS} keys from the dashboard; ask the operator for more`,
      );
    }
    return keys;
  };

  const handlers = {
    async ResolveWalletAccount(req: ResolveWalletAccountRequest__Output) {
      if (!ADDRESS.test(req.address)) {
        fail(grpc.status.INVALID_ARGUMENT, "invalid_argument", "address: expected 0x and 40 hex digits");
      }
      const address = req.address.toLowerCase();
      // Sign-up costs a wallet nothing, so what it gets is the free plan the operator set, never
      // the standard plan's figures (issue 34).
      const fresh: AccountRecord | undefined = req.create
        ? {
            id: newAccountId(),
            name: `wallet ${address}`,
            status: "active",
            ...deps.plans.free,
            plan: "free",
            createdAt: ops.nowIso(),
          }
        : undefined;
      const found = await records.walletAccount(address, fresh, async (a) => {
        await store.createAccount(a);
        await store.bindWallet(address, a.id);
      });
      if (!found) fail(grpc.status.NOT_FOUND, "not_found", "no account is bound to this address");
      // Bound in the copy at every sign-in too: a binding made before sign-in-with-x existed.
      if (!found.created) await store.bindWallet(address, found.account.id).catch(() => undefined);
      if (found.created)
        deps.logger.info(
          { accountId: found.account.id, plan: found.account.plan },
          "account created at sign-in",
        );
      // A top-up made this wallet's account credits only; its sign-up (the caller applied the
      // sign-up policy) moves it to the free plan, once.
      const joined =
        req.create && found.account.signUpPending
          ? await records.joinPlanAtSignUp(address, { ...deps.plans.free, plan: "free" }, ops.nowIso(), (a) =>
              store.createAccount(a),
            )
          : undefined;
      if (joined)
        deps.logger.info({ accountId: joined.id }, "top-up account joined the free plan at sign-up");
      const account = joined ?? found.account;
      return {
        account: toAccount(account),
        created: found.created,
        address,
        signUpPending: account.signUpPending === true,
        joinedFreePlan: joined !== undefined,
      };
    },

    async ListOwnKeys(req: ListOwnKeysRequest__Output) {
      const account = await own(req.accountId);
      return { keys: (await records.listKeys(account.id)).map(toApiKey) };
    },

    async CreateOwnKey(req: ListOwnKeysRequest__Output) {
      const account = await own(req.accountId);
      await roomForKey(account.id, true);
      const { key, secret } = await ops.createKey(account);
      return { key: toApiKey(key), secret };
    },

    async RevokeOwnKey(req: RevokeOwnKeyRequest__Output) {
      return { key: toApiKey(await ops.revokeKey(req.accountId, req.keyId)) };
    },

    async ReplaceOwnKey(req: ReplaceOwnKeyRequest__Output) {
      const account = await own(req.accountId);
      const keyId = requireId(req.keyId, "key_id");
      // Refuse before creating anything when the key is not this account's or already revoked.
      // Replacing keeps the live count; the total still bounds a replace loop.
      const old = (await roomForKey(account.id, false)).find((k) => k.id === keyId);
      if (!old) fail(grpc.status.NOT_FOUND, "not_found", `no key ${keyId} on account ${account.id}`);
      if (old.revokedAt)
        fail(grpc.status.FAILED_PRECONDITION, "key_revoked", `key ${keyId} is already revoked`);
      // The new key first: a failure between the two leaves the user with a working key.
      const { key, secret } = await ops.createKey(account);
      const revoked = await ops.revokeKey(account.id, keyId);
      return { key: toApiKey(key), secret, revoked: toApiKey(revoked) };
    },

    async GetOwnCredits(req: GetOwnCreditsRequest__Output) {
      const account = await own(req.accountId);
      return deps.credits.ownCredits(account.id, account.creditsOnly === true, req.days);
    },

    async GetOwnUsage(req: GetOwnUsageRequest__Output): Promise<GetOwnUsageResponse> {
      const account = await own(req.accountId);
      const count = req.days > 0 ? Math.min(req.days, MAX_DAYS) : DEFAULT_DAYS;
      const nowMs = deps.now();
      const windows = windowsAt(nowMs);
      const days = recentDays(nowMs, count);
      const [counts, totals] = await Promise.all([
        // The windows as Authorize counts them; unknown while the store is away (no quota, spec 8.3).
        store.readWindows(account.id, windows, nowMs).catch(() => undefined),
        records.accountUsage(account.id, days[0] ?? windows.day),
      ]);
      const byDay = new Map(totals.map((t) => [t.day, t]));
      return {
        account: toAccount(account),
        ...(counts
          ? {
              quota: quotaOf({
                dayLimit: account.dailyLimit,
                monthLimit: account.monthlyLimit,
                dayUsed: counts.dayUsed,
                monthUsed: counts.monthUsed,
              }),
            }
          : {}),
        dayWindow: windows.day,
        monthWindow: windows.month,
        days: days.map((day) => ({
          day,
          requests: byDay.get(day)?.requests ?? 0,
          errors: byDay.get(day)?.errors ?? 0,
        })),
        burstPerSecond: account.burstPerSecond || deps.defaultBurst,
      };
    },
  };

  return Object.fromEntries(
    Object.entries(handlers).map(([method, handler]) => [
      method,
      (req: any) => ops.guarded(() => (handler as (r: any) => Promise<unknown>)(req)),
    ]),
  );
}
