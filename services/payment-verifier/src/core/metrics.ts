// Payment metrics, registered once for every scheme (the `scheme` label tells them apart): latency
// and outcome of verify and settle, reservation conflicts (replays, concurrent uses of one payment),
// releases, refusals answered from memory, attempts over the limits, facilitator start-up failures.
import { prom, type Registry } from "@tollgate/platform";

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface PaymentMetrics {
  verifySeconds: prom.Histogram<"scheme" | "outcome">;
  settleSeconds: prom.Histogram<"scheme" | "outcome">;
  reservationConflicts: prom.Counter<"scheme" | "operation">;
  releases: prom.Counter<"scheme">;
  /** Credentials refused again from memory, without a facilitator round trip. */
  refusalsRemembered: prom.Counter<"scheme">;
  /** Payment attempts refused by the per-client or per-payer limit. */
  attemptsLimited: prom.Counter<"scope">;
  facilitatorInitFailures: prom.Counter<"scheme">;
  /** Settlements that collected after their Settle's caller stopped waiting (it answered 503). */
  settledAfterDeadline: prom.Counter<"scheme">;
  /** Settles answered failed while their payment may still collect (see PaymentsCore). */
  settleOutcomeUnknown: prom.Counter<"scheme">;
  /** Payments refused at Verify because the payer's balance does not cover its draws in flight. */
  overdrawn: prom.Counter<"scheme">;
  /** Payments that draw on the payer's balance whose balance was not read: not checked. */
  balanceUnknown: prom.Counter<"scheme">;
  /** Settlement transactions of ours that were mined and reverted: gas paid, nothing collected. */
  settlementsReverted: prom.Counter<"scheme">;
  /** What those reverted transactions cost in fees (gas used × effective gas price), in wei. */
  revertedFeesWei: prom.Counter<"scheme">;
  /** Settlements not sent because a check just before sending found them failing (nothing spent). */
  settlementsWithheld: prom.Counter<"scheme" | "reason">;
  /** Sign-in-with-x proofs checked: latency by outcome ("valid", or the refusal's code). */
  signInSeconds: prom.Histogram<"outcome">;
  /**
   * Payments carrying a payment identifier (core/answers.ts), by what became of the identifier:
   * `kept`, `too_large`, `lapsed` (its claim gone before the answer came), `replayed`,
   * `in_progress`, `conflict`.
   */
  identifiedAnswers: prom.Counter<"scheme" | "outcome">;
}

/**
 * Every counter starts at 0 for each scheme and scope that can move it, so a first event is an
 * increase Prometheus sees (alerts use increase(); a series born at 1 would hide it).
 */
export function zeroPaymentMetrics(metrics: PaymentMetrics, schemes: readonly string[]): void {
  for (const scheme of schemes) {
    metrics.facilitatorInitFailures.inc({ scheme }, 0);
    metrics.refusalsRemembered.inc({ scheme }, 0);
    metrics.releases.inc({ scheme }, 0);
    metrics.settledAfterDeadline.inc({ scheme }, 0);
    metrics.settleOutcomeUnknown.inc({ scheme }, 0);
    metrics.overdrawn.inc({ scheme }, 0);
    metrics.balanceUnknown.inc({ scheme }, 0);
    metrics.settlementsReverted.inc({ scheme }, 0);
    metrics.revertedFeesWei.inc({ scheme }, 0);
    for (const operation of ["verify", "settle"]) metrics.reservationConflicts.inc({ scheme, operation }, 0);
    for (const outcome of ["kept", "too_large", "lapsed", "replayed", "in_progress", "conflict"])
      metrics.identifiedAnswers.inc({ scheme, outcome }, 0);
  }
  for (const scope of ["client", "payer"]) metrics.attemptsLimited.inc({ scope }, 0);
}

export function createPaymentMetrics(registry: Registry): PaymentMetrics {
  return {
    verifySeconds: new prom.Histogram({
      name: "payment_verify_seconds",
      help: "Payment verification latency by scheme and outcome (valid, answered, payment_invalid, payment_required, service_unavailable, rate_limited, not_applicable, identifier_conflict, identifier_in_progress)",
      labelNames: ["scheme", "outcome"],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    settleSeconds: new prom.Histogram({
      name: "payment_settle_seconds",
      help: "Payment settlement latency by scheme and outcome (settled, accrued, channel_settled, payment_invalid, service_unavailable)",
      labelNames: ["scheme", "outcome"],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    reservationConflicts: new prom.Counter({
      name: "payment_reservation_conflicts_total",
      help: "Payments refused because they were already reserved or used (replays, concurrent use)",
      labelNames: ["scheme", "operation"],
      registers: [registry],
    }),
    releases: new prom.Counter({
      name: "payment_releases_total",
      help: "Verified payments released unused because the call got no answer",
      labelNames: ["scheme"],
      registers: [registry],
    }),
    refusalsRemembered: new prom.Counter({
      name: "payment_refusals_remembered_total",
      help: "Credentials refused again from the short refusal memory, without a facilitator call",
      labelNames: ["scheme"],
      registers: [registry],
    }),
    attemptsLimited: new prom.Counter({
      name: "payment_attempts_limited_total",
      help: "Payment attempts refused with 429 by the per-client or per-payer attempt limit",
      labelNames: ["scope"],
      registers: [registry],
    }),
    facilitatorInitFailures: new prom.Counter({
      name: "payment_facilitator_init_failures_total",
      help: "Failed attempts to learn what a payment scheme's facilitator supports",
      labelNames: ["scheme"],
      registers: [registry],
    }),
    settledAfterDeadline: new prom.Counter({
      name: "payment_settled_after_deadline_total",
      help: "Settlements that collected after their Settle's caller stopped waiting: the call was answered 503 and its payer paid for it (docs/runbook.md)",
      labelNames: ["scheme"],
      registers: [registry],
    }),
    settleOutcomeUnknown: new prom.Counter({
      name: "payment_settle_outcome_unknown_total",
      help: "Settles answered 503 while their payment may still collect: another Settle of the call still settling at the deadline, or a transfer broadcast and not confirmed in time (docs/runbook.md)",
      labelNames: ["scheme"],
      registers: [registry],
    }),
    overdrawn: new prom.Counter({
      name: "payment_overdrawn_total",
      help: "Payments refused at Verify because the payer's balance does not cover them with its other payments being settled",
      labelNames: ["scheme"],
      registers: [registry],
    }),
    balanceUnknown: new prom.Counter({
      name: "payment_balance_unknown_total",
      help: "Payments drawing on the payer's balance whose balance was not read (a remote facilitator without X402_SETTLEMENT_RPC_URL, a read that failed): their draws in flight were not checked",
      labelNames: ["scheme"],
      registers: [registry],
    }),
    settlementsReverted: new prom.Counter({
      name: "payment_settlements_reverted_total",
      help: "Settlement transactions sent by payment-verifier that were mined and reverted: gas paid, nothing collected",
      labelNames: ["scheme"],
      registers: [registry],
    }),
    revertedFeesWei: new prom.Counter({
      name: "payment_settlement_reverted_fees_wei_total",
      help: "Fees paid for reverted settlement transactions (gas used x effective gas price), in wei of the settlement chain's native coin",
      labelNames: ["scheme"],
      registers: [registry],
    }),
    settlementsWithheld: new prom.Counter({
      name: "payment_settlements_withheld_total",
      help: "Settlements not sent because the check just before sending found they would fail (authorization used or canceled, balance spent): nothing spent",
      labelNames: ["scheme", "reason"],
      registers: [registry],
    }),
    signInSeconds: new prom.Histogram({
      name: "sign_in_verify_seconds",
      help: "Sign-in-with-x proofs checked by VerifySignIn: latency by outcome (valid, rate_limited, service_unavailable, or the extension's invalid_siwx_* code)",
      labelNames: ["outcome"],
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    identifiedAnswers: new prom.Counter({
      name: "payment_identifier_answers_total",
      help: "Payments carrying an x402 payment identifier, by what became of it: kept (its answer kept for a retry), too_large (not kept), lapsed, replayed (a retry given the first answer), in_progress, conflict",
      labelNames: ["scheme", "outcome"],
      registers: [registry],
    }),
  };
}
