import { contracts, createClient, type MeshClientOptions } from "@tollgate/platform";
import type { AuthorizeResponse__Output } from "@tollgate/platform/generated/tollgate/quota/v1/AuthorizeResponse";
import type { UsageRecord } from "@tollgate/platform/generated/tollgate/quota/v1/UsageRecord";

export type Authorization = AuthorizeResponse__Output;
export type { UsageRecord };

/** The gateway's view of quota-meter: authorize a key, report finished calls, read usage. */
export function createQuotaMeterClient(address: string, mesh: MeshClientOptions, deadlineMs: number) {
  const client = createClient(contracts.quotaMeter().QuotaMeterService, address, {
    service: "quota-meter",
    ...mesh,
    defaultDeadlineMs: deadlineMs,
  });
  return {
    authorize(req: { requestId: string; apiKey: string; endpoint: string; network: string }) {
      return client.call("Authorize", req);
    },
    report(records: UsageRecord[], batchId: string) {
      return client.call("ReportUsage", { records, batchId }, { deadlineMs: 5_000 });
    },
    usage(apiKey: string, days: number) {
      return client.call("GetUsage", { apiKey, days });
    },
    close: () => client.close(),
  };
}

export type QuotaMeterClient = ReturnType<typeof createQuotaMeterClient>;
