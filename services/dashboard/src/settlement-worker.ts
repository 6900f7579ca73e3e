import { contracts, createClient, type MeshClientOptions } from "@tollgate/platform";

/**
 * The dashboard's view of the payment ledger: SettlementAccountService's one method, a payer's own
 * payments. The payer is always the signed-in session's address (api.ts), never a caller's input.
 */
export function createPaymentsClient(address: string, mesh: MeshClientOptions, deadlineMs: number) {
  const client = createClient(contracts.settlementWorker().SettlementAccountService, address, {
    service: "settlement-worker",
    ...mesh,
    defaultDeadlineMs: deadlineMs,
  });
  return {
    ownPayments: (payer: string, limit: number, cursor: string) =>
      client.call("ListOwnPayments", { payer, limit, cursor }),
    close: () => client.close(),
  };
}

export type PaymentsClient = ReturnType<typeof createPaymentsClient>;
