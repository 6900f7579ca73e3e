// payment-verifier's side of an x402-batch refund once Verify took it (schemes/x402-batch-refunds.ts),
// with a store and a clock made for the test: Settle answers with the worker's outcome as the spec's
// receipt, answers 503 before its caller's deadline while the refund is still queued (the refund
// still goes out: the store keeps it submitted), and never answers success for a refused one.
import { decodePaymentResponseHeader } from "@x402/core/http";
import { describe, expect, it } from "vitest";
import type { RefundOutcome } from "../../libs/payment-rails/src/batch-refunds.ts";
import type { X402Config } from "../../services/payment-verifier/src/config.ts";
import type { X402Protocol } from "../../services/payment-verifier/src/protocols/x402.ts";
import type { BatchPayment } from "../../services/payment-verifier/src/schemes/x402-batch-credential.ts";
import {
  batchRefunds,
  type RefundDeps,
} from "../../services/payment-verifier/src/schemes/x402-batch-refunds.ts";
import type { BatchRefundStore } from "../../services/payment-verifier/src/stores/batch-refunds.ts";

const NETWORK = "eip155:84532";
const CHANNEL = `0x${"ab".repeat(32)}`;
const payment = {
  type: "refund",
  channelId: CHANNEL,
  payer: "0x00000000000000000000000000000000000000aa",
  cumulative: "30000",
  refundAmount: "",
} as unknown as BatchPayment;

/** A clock that moves only when Settle sleeps, and a store whose outcome appears when the test says. */
function harness(outcomeAfterMs: number | undefined, outcome?: RefundOutcome) {
  let now = 1_000_000;
  const submitted: string[] = [];
  const store = {
    submit: async (_channel: string, id: string) => {
      submitted.push(id);
      return "submitted" as const;
    },
    outcome: async () =>
      outcomeAfterMs !== undefined && now >= 1_000_000 + outcomeAfterMs ? outcome : undefined,
  } as unknown as BatchRefundStore;
  const deps = {
    cfg: { network: NETWORK } as unknown as X402Config,
    refunds: store,
    protocol: {
      receipt: (r: object) => ({
        name: "PAYMENT-RESPONSE",
        value: Buffer.from(JSON.stringify(r)).toString("base64"),
      }),
    } as unknown as X402Protocol,
    logger: { info: () => undefined } as unknown as RefundDeps["logger"],
    now: () => now,
    sleep: async (ms: number) => {
      now += ms;
    },
  } as unknown as RefundDeps;
  return { refunds: batchRefunds(deps), submitted, now: () => now };
}

const done: RefundOutcome = {
  id: "refund-1",
  channelId: CHANNEL,
  cumulative: "30000",
  requested: "",
  ok: true,
  transaction: `0x${"cd".repeat(32)}`,
  amount: "970000",
  channelState: {
    channelId: CHANNEL,
    balance: "30000",
    totalClaimed: "30000",
    withdrawRequestedAt: 0,
    refundNonce: "1",
    chargedCumulativeAmount: "30000",
  },
};

describe("x402-batch refund Settle (payment-verifier): the worker's outcome, or 503 in time", () => {
  it("answers the spec's refund receipt once the worker's outcome is there", async () => {
    const h = harness(1_200, done);
    const result = await h.refunds.settle(payment, "refund-1", 1_000_000 + 30_000);
    expect(h.submitted).toEqual(["refund-1"]);
    expect(result).toMatchObject({
      ok: true,
      collection: { kind: "refund", amount: "970000", transaction: done.transaction, cumulative: "30000" },
    });
    const receipt = decodePaymentResponseHeader(
      (result as { receipt: { value: string }[] }).receipt[0]?.value ?? "",
    );
    expect(receipt).toMatchObject({
      success: true,
      transaction: done.transaction,
      amount: "970000",
      network: NETWORK,
      extra: { channelState: { balance: "30000", refundNonce: "1" } },
    });
  });

  it("still queued: 503 before the caller's deadline (the request stays submitted for the worker)", async () => {
    const h = harness(undefined);
    const deadline = 1_000_000 + 5_000;
    const result = await h.refunds.settle(payment, "refund-1", deadline);
    expect(result).toMatchObject({ ok: false, code: "service_unavailable" });
    expect(h.now()).toBeLessThan(deadline);
  });

  it("refused by the chain: a failed receipt (402), never success; an unknown outcome is a 503", async () => {
    const refused = harness(0, {
      ...done,
      ok: false,
      errorReason: "invalid_batch_settlement_evm_refund_simulation_failed",
      errorMessage: "reverted",
      transaction: "",
    } as RefundOutcome);
    const result = await refused.refunds.settle(payment, "refund-1", Number.POSITIVE_INFINITY);
    expect(result).toMatchObject({ ok: false, code: "payment_invalid" });
    const receipt = decodePaymentResponseHeader(
      (result as { receipt: { value: string }[] }).receipt[0]?.value ?? "",
    );
    expect(receipt).toMatchObject({
      success: false,
      errorReason: "invalid_batch_settlement_evm_refund_simulation_failed",
    });
    const unknown = harness(0, {
      ...done,
      ok: false,
      unknown: true,
      errorReason: "settlement_pending",
      errorMessage: "x",
      transaction: "",
    } as RefundOutcome);
    expect(await unknown.refunds.settle(payment, "refund-1", Number.POSITIVE_INFINITY)).toMatchObject({
      ok: false,
      code: "service_unavailable",
    });
  });
});
