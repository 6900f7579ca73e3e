// Every settlement outcome of a paid call becomes one tollgate.settlement.v2 event. Its id is the
// reservation's mesh-generated token plus the outcome, so an outbox retry or a stream replay is
// stored once, and no caller can choose or collide with it.
import { paidResource } from "@tollgate/catalog";
import type { SettlementEventV2 } from "@tollgate/events";
import type { Logger } from "@tollgate/platform";
import type { Reservation } from "../stores/reservations.ts";
import type { Collection } from "./types.ts";

export type CallOutcome = "settled" | "accrued" | "channel_settled" | "failed" | "released";

/**
 * The id of the event of a payment's `outcome`: its reservation's token (mesh-generated) and the
 * outcome. Settle answers it too (settlement_id): a top-up is credited under it, once, whether by
 * the gateway or from this event.
 */
export function settlementEventId(token: string, outcome: CallOutcome): string {
  return `${token}:${outcome}`;
}

/** Where events go: the durable outbox in front of JetStream (adapters/events.ts), or a test's list. */
export interface SettlementSink {
  /** Records the event durably; never throws because NATS is down. */
  publish(event: SettlementEventV2): void;
}

export interface SettlementRecorder {
  record(
    reservation: Reservation,
    outcome: CallOutcome,
    collection: Collection | null,
    reason: string | null,
  ): void;
}

/**
 * `released` events (a verified payment whose call got no answer or was refused after Verify) leave
 * this process at most this often per payer per hour: one authorization reused on a refused call
 * could otherwise write an event (an outbox line, a stream message, a ledger row) ~50 times a
 * second for free. Every release is still counted (payment_releases_total); the ledger keeps
 * samples of them. The payers remembered are bounded too.
 */
export const RELEASED_PER_PAYER_PER_HOUR = 20;
const RELEASED_PAYERS_MAX = 10_000;

export function createSettlementRecorder(
  sink: SettlementSink,
  logger: Logger,
  now = Date.now,
): SettlementRecorder {
  /** Per payer (lower case): the hour counted and how many released events it sent in it. */
  const released = new Map<string, { hour: number; sent: number }>();
  const sampled = (payer: string): boolean => {
    const hour = Math.floor(now() / 3_600_000);
    const key = payer.toLowerCase();
    const seen = released.get(key);
    if (seen && seen.hour === hour) return ++seen.sent <= RELEASED_PER_PAYER_PER_HOUR;
    if (!seen && released.size >= RELEASED_PAYERS_MAX) released.delete(released.keys().next().value ?? "");
    released.delete(key);
    released.set(key, { hour, sent: 1 });
    return true;
  };
  return {
    record(r, outcome, collection, reason) {
      if (outcome === "released" && !sampled(r.payer)) return;
      const event: SettlementEventV2 = {
        id: settlementEventId(r.token, outcome),
        request_id: r.requestId || null,
        endpoint: r.endpoint || null,
        network: r.network || null,
        scheme: r.scheme,
        payer: r.payer,
        amount: collection && collection.kind !== "transaction" ? collection.amount : r.amount,
        asset: r.asset,
        payment_network: r.paymentNetwork,
        outcome,
        transaction:
          collection && collection.kind !== "accrual" && collection.transaction
            ? collection.transaction
            : null,
        channel: collection && collection.kind !== "transaction" ? collection.channel : null,
        cumulative: collection && collection.kind !== "transaction" ? collection.cumulative : null,
        reason: reason === null ? null : reason.slice(0, 1000),
        time: new Date(now()).toISOString(),
        // A top-up's events say so, and name the account the buyer chose (else the payer's).
        ...(paidResource(r.endpoint)?.topUp ? { top_up: r.account ? { account_id: r.account } : {} } : {}),
      };
      try {
        sink.publish(event);
      } catch (err) {
        logger.error({ err, event }, "settlement event rejected");
      }
    },
  };
}
