import { type Plans, plansFrom } from "@tollgate/catalog";
import { contracts, createClient, type MeshClientOptions } from "@tollgate/platform";

/**
 * The dashboard's view of quota-meter: AccountService, the user-scoped operations, and the plans
 * it states (DescribePlans), nothing else.
 */
export function createAccountClient(address: string, mesh: MeshClientOptions, deadlineMs: number) {
  const options = { service: "quota-meter", ...mesh, defaultDeadlineMs: deadlineMs };
  const client = createClient(contracts.quotaMeter().AccountService, address, options);
  const meter = createClient(contracts.quotaMeter().QuotaMeterService, address, options);
  return {
    resolve: (address: string, create: boolean) => client.call("ResolveWalletAccount", { address, create }),
    listKeys: (accountId: string) => client.call("ListOwnKeys", { accountId }),
    createKey: (accountId: string) => client.call("CreateOwnKey", { accountId }),
    revokeKey: (accountId: string, keyId: string) => client.call("RevokeOwnKey", { accountId, keyId }),
    replaceKey: (accountId: string, keyId: string) => client.call("ReplaceOwnKey", { accountId, keyId }),
    usage: (accountId: string, days: number) => client.call("GetOwnUsage", { accountId, days }),
    credits: (accountId: string, days: number) => client.call("GetOwnCredits", { accountId, days }),
    plans: async (): Promise<Plans> => plansFrom(await meter.call("DescribePlans", {})),
    close: () => {
      client.close();
      meter.close();
    },
  };
}

export type AccountClient = ReturnType<typeof createAccountClient>;
