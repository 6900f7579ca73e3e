// biome-ignore-all lint/suspicious/noExplicitAny: gRPC call objects are untyped at this boundary
import { checkOperator, grpc, type UnaryHandler } from "@tollgate/platform";
import type { AdjustCreditsRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/AdjustCreditsRequest";
import type { CreateAccountRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/CreateAccountRequest";
import type { CreateKeyRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/CreateKeyRequest";
import type { GetAccountRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/GetAccountRequest";
import type { ListCreditMovementsRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/ListCreditMovementsRequest";
import type { ListKeysRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/ListKeysRequest";
import type { RevokeKeyRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/RevokeKeyRequest";
import type { UpdateAccountRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/UpdateAccountRequest";
import type { Credits } from "./credits.ts";
import { createKeyOps, fail, type KeyOpsDeps, requireId, toAccount, toApiKey } from "./key-ops.ts";
import { newAccountId } from "./keys.ts";
import { type PlanBook, planOf } from "./plans.ts";
import { ACCOUNT_STATUSES, type AccountPatch, type AccountRecord, isAccountStatus } from "./store/types.ts";

export interface AdminDeps extends KeyOpsDeps {
  operatorToken: string | undefined;
  /** What each plan gives; an account made here joins the standard plan unless told otherwise. */
  plans: PlanBook;
  credits: Credits;
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

/** The limits a request names (only those present). */
function figures(
  r: Record<string, unknown>,
): Partial<Pick<AccountRecord, "dailyLimit" | "monthlyLimit" | "burstPerSecond">> {
  const daily = limit(optional<number>(r, "dailyLimit"), "daily_limit");
  const monthly = limit(optional<number>(r, "monthlyLimit"), "monthly_limit");
  const burst = limit(optional<number>(r, "burstPerSecond"), "burst_per_second");
  return {
    ...(daily !== undefined ? { dailyLimit: daily } : {}),
    ...(monthly !== undefined ? { monthlyLimit: monthly } : {}),
    ...(burst !== undefined ? { burstPerSecond: burst } : {}),
  };
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
      const planName = optional<string>(r, "plan");
      const plan = planName === undefined ? "standard" : planOf(planName, "plan");
      const account: AccountRecord = {
        id: newAccountId(),
        name,
        status: "active",
        ...deps.plans[plan],
        ...figures(r),
        plan,
        createdAt: nowIso(),
        creditsOnly: optional<boolean>(r, "creditsOnly") === true,
      };
      await records.createAccount(account, () => store.createAccount(account));
      logger.info({ accountId: account.id }, "account created");
      return { account: toAccount(account) };
    },

    async GetAccount(req: GetAccountRequest__Output) {
      const account = await mustGetAccount(req.accountId);
      const credits = await deps.credits.accountCredits(account.id);
      return { account: { ...toAccount(account), credits: Math.max(0, credits.balance) }, credits };
    },

    async AdjustCredits(req: AdjustCreditsRequest__Output) {
      const account = await mustGetAccount(req.accountId);
      return deps.credits.adjust({ ...req, accountId: account.id, amount: Number(req.amount) });
    },

    async ListCreditMovements(req: ListCreditMovementsRequest__Output) {
      const account = await mustGetAccount(req.accountId);
      return deps.credits.movements(account.id, req.days);
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
      const planName = optional<string>(r, "plan");
      // A move to a plan takes its figures, but for the limits named in the same call.
      const plan = planName === undefined ? undefined : planOf(planName, "plan");
      const patch: AccountPatch = { ...(plan ? { ...deps.plans[plan], plan } : {}), ...figures(r) };
      if (status !== undefined) patch.status = status;
      const creditsOnly = optional<boolean>(r, "creditsOnly");
      if (creditsOnly !== undefined) patch.creditsOnly = creditsOnly;
      // The operator set how it pays: a top-up's account no longer waits for a sign-up's free plan.
      if (plan !== undefined || creditsOnly !== undefined) patch.signUpPending = false;
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
