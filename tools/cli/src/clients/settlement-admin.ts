// The operator's client of SettlementAdminService (the CLI and the tests), with the operator token.
import { contracts, createClient, operatorCall } from "@tollgate/platform";
import type { ListSettlementsRequest } from "@tollgate/platform/generated/tollgate/settlement/v1/ListSettlementsRequest";

export function createLedgerClient(address: string, token: string | undefined, deadlineMs = 30_000) {
  const client = createClient(contracts.settlementWorker().SettlementAdminService, address, {
    service: "settlement-admin",
    defaultDeadlineMs: deadlineMs,
    // The operator is not a mesh caller: the admin API checks the operator token instead.
    token: undefined,
  });
  const options = () => operatorCall(token);
  return {
    list: (req: ListSettlementsRequest) => client.call("ListSettlements", req, options()),
    reconcile: (fromBlock: number, toBlock: number) =>
      client.call("Reconcile", { fromBlock, toBlock }, options()),
    close: () => client.close(),
  };
}

export type LedgerClient = ReturnType<typeof createLedgerClient>;
