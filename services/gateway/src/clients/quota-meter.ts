import { type Plans, plansFrom } from "@tollgate/catalog";
import { contracts, createClient, type MeshClientOptions } from "@tollgate/platform";
import type { AuthorizeResponse__Output } from "@tollgate/platform/generated/tollgate/quota/v1/AuthorizeResponse";
import type { LeaseReturn } from "@tollgate/platform/generated/tollgate/quota/v1/LeaseReturn";
import type { UsageRecord } from "@tollgate/platform/generated/tollgate/quota/v1/UsageRecord";

export type Authorization = AuthorizeResponse__Output;
export type { LeaseReturn, UsageRecord };

/** The gateway's view of quota-meter: authorize a key, report finished calls, read usage, the plans. */
export function createQuotaMeterClient(address: string, mesh: MeshClientOptions, deadlineMs: number) {
  const client = createClient(contracts.quotaMeter().QuotaMeterService, address, {
    service: "quota-meter",
    ...mesh,
    defaultDeadlineMs: deadlineMs,
  });
  const credits = createClient(contracts.quotaMeter().CreditService, address, {
    service: "quota-meter",
    ...mesh,
    defaultDeadlineMs: 5_000,
  });
  return {
    /**
     * Counts this call, or a lease of `leaseUnits` calls, for the key; or this call for the account
     * of a signed-in `wallet` (no key then).
     */
    authorize(req: {
      requestId: string;
      /** The key; empty or unset for a sign-in (`wallet`). */
      apiKey?: string;
      endpoint: string;
      network: string;
      leaseUnits: number;
      /** Calls the request holds (a JSON-RPC batch: one per call): counted all at once or none. */
      calls: number;
      /** This gateway's id of the Authorize: the lease's id, and what a release names. */
      authorizationId: string;
      /** The request's price in USDC atomic units: drawn from credits when the plan cannot serve it. */
      priceAtomic: number;
      /** Sign-in-with-x: the wallet payment-verifier verified (lower case), instead of a key. */
      wallet?: string;
      /** The key's credit lease this gateway just ended, and what it left: returned first. */
      closeCreditLeaseId?: string;
      closeCreditsLeft?: number;
    }) {
      return client.call("Authorize", req);
    },
    report(
      records: UsageRecord[],
      batchId: string,
      leaseReturns: LeaseReturn[] = [],
      releasedAuthorizations: string[] = [],
    ) {
      return client.call(
        "ReportUsage",
        { records, batchId, leaseReturns, releasedAuthorizations },
        { deadlineMs: 5_000 },
      );
    },
    usage(apiKey: string, days: number) {
      return client.call("GetUsage", { apiKey, days });
    },
    /** The plans quota-meter gives new accounts (the figures /api/pricing and the docs state). */
    async plans(): Promise<Plans> {
      return plansFrom(await client.call("DescribePlans", {}, { deadlineMs: 2_000 }));
    },
    /** Credits a settled top-up to the key's account, or the wallet's (made when new); once per cause. */
    topUp(req: {
      apiKey: string;
      wallet: string;
      amount: number;
      cause: string;
      scheme: string;
      paymentNetwork: string;
      transaction: string;
    }) {
      return credits.call("CreditTopUp", req);
    },
    close: () => {
      credits.close();
      client.close();
    },
  };
}

export type QuotaMeterClient = ReturnType<typeof createQuotaMeterClient>;
