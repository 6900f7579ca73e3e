// biome-ignore-all lint/suspicious/noExplicitAny: gRPC call objects are untyped at this boundary
// SettlementAccountService: a payer's own per-call payments, for the account dashboard. The mesh
// check lets only the dashboard call it; the dashboard sends the address its user signed in with,
// and the listing is that payer's and nothing else (no filter a caller could widen).
import { grpc, type Logger, ServiceError, type UnaryHandler } from "@tollgate/platform";
import type { ListOwnPaymentsRequest__Output } from "@tollgate/platform/generated/tollgate/settlement/v1/ListOwnPaymentsRequest";
import type { ListOwnPaymentsResponse } from "@tollgate/platform/generated/tollgate/settlement/v1/ListOwnPaymentsResponse";
import type { LedgerStore } from "./adapters/ledger-store.ts";
import { toSettlement } from "./admin.ts";
import { decodeCursor } from "./core/ledger.ts";

/** A page of payments: small enough for a page of the dashboard, bounded whatever is asked. */
const OWN_PAYMENTS_LIMIT = { default: 50, max: 200 } as const;

const invalid = (message: string): never => {
  throw new ServiceError(grpc.status.INVALID_ARGUMENT, "invalid_argument", message);
};

export function createAccountHandlers(deps: {
  ledger: LedgerStore;
  logger: Logger;
}): Record<string, UnaryHandler<any, any>> {
  return {
    async ListOwnPayments(req: ListOwnPaymentsRequest__Output): Promise<ListOwnPaymentsResponse> {
      if (!/^0x[0-9a-fA-F]{40}$/.test(req.payer))
        invalid("payer: expected an address (0x and 40 hex digits)");
      if (req.limit > OWN_PAYMENTS_LIMIT.max) invalid(`limit: at most ${OWN_PAYMENTS_LIMIT.max}`);
      const cursor = req.cursor ? decodeCursor(req.cursor) : undefined;
      if (req.cursor && !cursor) invalid("cursor: not a cursor this API returned");
      try {
        const page = await deps.ledger.payments(req.payer, req.limit || OWN_PAYMENTS_LIMIT.default, cursor);
        return { settlements: page.entries.map(toSettlement), nextCursor: page.nextCursor };
      } catch (err) {
        deps.logger.warn({ err }, "own payments failed");
        throw new ServiceError(
          grpc.status.UNAVAILABLE,
          "service_unavailable",
          "the ledger is unavailable; retry",
        );
      }
    },
  };
}
