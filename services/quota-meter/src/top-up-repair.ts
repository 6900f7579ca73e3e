// The repair of a top-up whose credit call never happened. The gateway credits a settled top-up
// itself (CreditService.CreditTopUp, under the settlement's id); if it crashed, lost the link or its
// call failed after the settlement, the payer paid and nothing was credited. payment-verifier's
// settlement event is written durably (its outbox) before Settle answers, and a top-up's names it
// (`top_up`, with the account a buyer chose by API key): this consumer credits every `settled` one
// under the same id, `event.id` — the ledger's unique cause makes it once, whoever comes first.
// It waits until an event is REPAIR_AFTER_MS old, so the gateway's own call normally comes first
// and answers the buyer with the balance (and with the account it made), and a credit made here is
// a repair that is counted and logged as one.
import { type EventConsumer, SETTLEMENT_V2, type SettlementEventV2 } from "@tollgate/events";
import { grpc, type Logger, ServiceError } from "@tollgate/platform";
import type { Credits } from "./credits.ts";
import type { QuotaMetrics } from "./metrics.ts";

const TOP_UP_REPAIR_DURABLE = "quota-meter-top-ups";
/** How old a settled top-up's event is before it is credited here (the gateway's call takes ms). */
const REPAIR_AFTER_MS = 10_000;
/** Redelivery of an event too young, or of one whose credit failed (PostgreSQL or Redis away). */
const RETRY_MS = 5_000;

class NotYet extends Error {}

/** Refusals that cannot change on redelivery: logged, not retried. */
const FINAL = new Set<number>([grpc.status.INVALID_ARGUMENT, grpc.status.FAILED_PRECONDITION]);

export interface TopUpRepairDeps {
  credits: Credits;
  metrics: QuotaMetrics;
  logger: Logger;
  schemaReady: Promise<void>;
  now?: () => number;
}

/** Credits one settlement event if it is a settled top-up; throws to have it redelivered. */
async function repairTopUp(event: SettlementEventV2, deps: TopUpRepairDeps): Promise<void> {
  if (event.outcome !== "settled" || !event.top_up) return;
  const now = deps.now ?? Date.now;
  if (now() - Date.parse(event.time) < REPAIR_AFTER_MS) throw new NotYet("a top-up settled moments ago");
  await deps.schemaReady;
  try {
    const answer = await deps.credits.topUpSettled({
      accountId: event.top_up.account_id,
      wallet: event.payer,
      amount: Number(event.amount),
      cause: event.id,
      scheme: event.scheme,
      paymentNetwork: event.payment_network,
      transaction: event.transaction ?? "",
    });
    if (answer.credited) {
      deps.metrics.topUpsRepaired.inc();
      deps.logger.warn(
        { cause: event.id, accountId: answer.accountId, amount: event.amount, requestId: event.request_id },
        "a settled top-up the gateway did not credit was credited from the settlement stream",
      );
    }
  } catch (err) {
    if (err instanceof ServiceError && FINAL.has(err.grpcCode)) {
      deps.logger.error(
        { cause: event.id, err: err.message, payer: event.payer },
        "a settled top-up cannot be credited: refund the payer by hand (the settlement ledger row has the transaction)",
      );
      return;
    }
    throw err;
  }
}

/** Consumes the settlement stream for settled top-ups (one durable, shared by the replicas). */
export function startTopUpRepair(consumer: EventConsumer, deps: TopUpRepairDeps): void {
  consumer.consume(SETTLEMENT_V2, TOP_UP_REPAIR_DURABLE, (event) => repairTopUp(event, deps), {
    retryDelayMs: RETRY_MS,
    ackWaitMs: 30_000,
  });
}
