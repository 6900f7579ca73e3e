// The operator's client of QuotaAdminService: the one typed adapter the CLI, the local stack
// (deploy/local), the benchmark and the tests all use, each call carrying the operator token.
import { contracts, createClient, operatorCall } from "@tollgate/platform";
import type { AdjustCreditsRequest } from "@tollgate/platform/generated/tollgate/quota/v1/AdjustCreditsRequest";
import type { CreateAccountRequest } from "@tollgate/platform/generated/tollgate/quota/v1/CreateAccountRequest";
import type { UpdateAccountRequest } from "@tollgate/platform/generated/tollgate/quota/v1/UpdateAccountRequest";

/** A plan for a new account: limits per window (0 = uncapped) and burst rate; omitted = service defaults. */
export interface Plan {
  daily?: number;
  monthly?: number;
  burst?: number;
  /** Calls paid from prepaid credits only. */
  creditsOnly?: boolean;
}

function planFields(plan: Plan): Omit<CreateAccountRequest, "name"> {
  return {
    ...(plan.daily !== undefined ? { dailyLimit: plan.daily } : {}),
    ...(plan.monthly !== undefined ? { monthlyLimit: plan.monthly } : {}),
    ...(plan.burst !== undefined ? { burstPerSecond: plan.burst } : {}),
    ...(plan.creditsOnly !== undefined ? { creditsOnly: plan.creditsOnly } : {}),
  };
}

/** `token` undefined sends no token (to show how the service refuses that). */
export function createAdminClient(address: string, token: string | undefined, deadlineMs = 10_000) {
  const client = createClient(contracts.quotaMeter().QuotaAdminService, address, {
    service: "quota-admin",
    defaultDeadlineMs: deadlineMs,
    // The operator is not a mesh caller: the admin API checks the operator token instead.
    token: undefined,
  });
  const options = () => operatorCall(token);
  const createAccount = (req: CreateAccountRequest) => client.call("CreateAccount", req, options());
  const createKey = (accountId: string) => client.call("CreateKey", { accountId }, options());
  return {
    createAccount,
    getAccount: (accountId: string) => client.call("GetAccount", { accountId }, options()),
    updateAccount: (req: UpdateAccountRequest) => client.call("UpdateAccount", req, options()),
    createKey,
    listKeys: (accountId: string) => client.call("ListKeys", { accountId }, options()),
    revokeKey: (accountId: string, keyId: string) =>
      client.call("RevokeKey", { accountId, keyId }, options()),
    adjustCredits: (req: AdjustCreditsRequest) => client.call("AdjustCredits", req, options()),
    creditMovements: (accountId: string, days = 0) =>
      client.call("ListCreditMovements", { accountId, days }, options()),
    /** An account on `plan` and its first key; the secret is in `secret`, shown this once. */
    async quickstart(name: string, plan: Plan = {}) {
      const { account } = await createAccount({ name, ...planFields(plan) });
      if (!account) throw new Error("CreateAccount returned no account");
      const { key, secret } = await createKey(account.id);
      if (!key) throw new Error("CreateKey returned no key");
      return { account, key, secret };
    },
    close: () => client.close(),
  };
}

export type AdminClient = ReturnType<typeof createAdminClient>;
