// The refunds payers ask for, on the claimer's side, driven with plain objects: payment-verifier
// took the request (test/payment-verifier/batch-refunds-store.test.ts has the scripts on Redis);
// the claimer sends it on its next pass, one transaction claiming what the channel charged and
// returning the rest, and writes its outcome. On the real chain: test/e2e/x402-batch-refund.test.ts.
import { settlementEventV2 } from "@tollgate/events";
import { describe, expect, it } from "vitest";
import { createClaimer } from "../../services/settlement-worker/src/core/x402-batch-claimer.ts";
import type { ChannelRecord } from "../../services/settlement-worker/src/core/x402-batch-claims.ts";
import { chain, id, NOW, payer, record, recorder, settings, world } from "../support/x402-batch-claimer.ts";

describe("the refunds payers ask for (payment-verifier takes them, the claimer sends them)", () => {
  /** A channel whose payer asked for a refund (submitted: payment-verifier's Settle asked for it). */
  const asked = (n: number, over: Partial<ChannelRecord> = {}, amount = ""): ChannelRecord =>
    record(n, {
      chargedCumulativeAmount: "30000",
      pendingRequest: { pendingId: `refund-${n}`, expiresAt: NOW + 60_000 },
      refundRequest: {
        id: `refund-${n}`,
        requestId: `req-${n}`,
        amount,
        cumulative: "30000",
        at: NOW - 100,
        submitted: true,
      },
      ...over,
    });

  it("claims what was charged and returns exactly the rest in one transaction, before the settle; the record goes", async () => {
    // Channel 2 is due a claim too: it goes in the batch, channel 1 only in its refund.
    const records = [asked(1), record(2, { chargedCumulativeAmount: "20000" })];
    const onchain = new Map([
      [id(1), chain({ balance: 1_000_000n, totalClaimed: 10_000n, refundNonce: 3n })],
      [id(2), chain()],
    ]);
    const w = world(records, onchain);
    const observe = recorder();
    const pass = await createClaimer(w.ports, settings, observe).pass();
    expect(w.sent).toEqual(["claim 1", `refund ${id(1)} 970000 with claim`, "settle"]);
    expect(pass.requested).toEqual([{ channel: id(1), transaction: expect.stringMatching(/^0x/) }]);
    expect(onchain.get(id(1))).toMatchObject({ balance: 30_000n, totalClaimed: 30_000n, refundNonce: 4n });
    const refundEvents = pass.events.filter((e) => e.channel === id(1));
    expect(refundEvents.map((e) => [e.outcome, e.amount, e.request_id, e.payer])).toEqual([
      ["claimed", "20000", "req-1", payer(1)],
      ["refunded", "970000", "req-1", payer(1)],
    ]);
    for (const e of pass.events) expect(settlementEventV2.safeParse(e).success).toBe(true);
    expect(pass.events.at(-1)).toMatchObject({ outcome: "channel_settled", amount: "40000" });
    expect(w.outcomes).toEqual([
      {
        after: "delete",
        outcome: {
          id: "refund-1",
          channelId: id(1),
          cumulative: "30000",
          requested: "",
          ok: true,
          transaction: pass.requested[0]?.transaction,
          amount: "970000",
          channelState: {
            channelId: id(1),
            balance: "30000",
            totalClaimed: "30000",
            withdrawRequestedAt: 0,
            refundNonce: "4",
            chargedCumulativeAmount: "30000",
          },
        },
      },
    ]);
    expect(records.map((r) => r.channelId)).toEqual([id(2)]);
    expect(observe.seen).toContain("refunded requested");
    // Nothing is sent twice.
    await createClaimer(w.ports, settings, recorder()).pass();
    expect(w.sent).toHaveLength(3);
  });

  it("a partial refund returns what was asked and keeps the channel, its lock let go", async () => {
    const records = [asked(1, {}, "100000")];
    const onchain = new Map([[id(1), chain({ balance: 1_000_000n, totalClaimed: 30_000n })]]);
    const w = world(records, onchain);
    await createClaimer(w.ports, settings, recorder()).pass();
    expect(w.sent).toEqual([`refund ${id(1)} 100000`]);
    expect(w.outcomes[0]).toMatchObject({ after: "update", outcome: { ok: true, amount: "100000" } });
    expect(records[0]).toMatchObject({
      balance: "900000",
      pendingRequest: undefined,
      refundRequest: undefined,
    });
  });

  it("sends nothing for a request not submitted, lapsed, on an unconfirmed deposit, or with nothing unspent", async () => {
    const records = [
      asked(1, {
        refundRequest: {
          ...(asked(1).refundRequest as NonNullable<ChannelRecord["refundRequest"]>),
          submitted: false,
        },
      }),
      asked(2, { pendingRequest: { pendingId: "refund-2", expiresAt: NOW - 1 } }),
      asked(3),
      asked(4),
    ];
    const onchain = new Map([
      [id(1), chain()],
      [id(2), chain()],
      [id(3), chain({ balance: 20_000n })], // the deposit that covers the charges is not confirmed
      [id(4), chain({ balance: 30_000n })], // balance == charged: nothing to return
    ]);
    const w = world(records, onchain);
    const pass = await createClaimer(w.ports, settings, recorder()).pass();
    expect(pass.requested).toEqual([]);
    expect(w.sent.filter((x) => x.startsWith("refund"))).toEqual([]);
    // Only the empty channel is answered (and let go); the unconfirmed one waits for a later pass.
    expect(w.outcomes).toEqual([
      {
        after: "unlock",
        outcome: expect.objectContaining({
          id: "refund-4",
          ok: false,
          errorReason: "invalid_batch_settlement_evm_refund_no_balance",
        }),
      },
    ]);
    expect(records.find((r) => r.channelId === id(3))?.refundRequest).toBeDefined();
  });

  it("a refund whose outcome is unknown keeps the channel held and its intent open; a refused one lets go", async () => {
    const records = [asked(1)];
    const w = world(records, new Map([[id(1), chain()]]));
    w.failRefunds(() => Promise.reject(new Error("facilitator unreachable")));
    const observe = recorder();
    await createClaimer(w.ports, settings, observe).pass();
    expect(w.outcomes).toEqual([
      { after: "keep", outcome: expect.objectContaining({ ok: false, unknown: true }) },
    ]);
    expect([...w.intents.values()].map((i) => i.operation)).toEqual(["refund"]);
    expect(records[0]?.pendingRequest?.pendingId).toBe("refund-1");
    expect(observe.seen.at(-1)).toBe("failed refund: facilitator unreachable");

    w.failRefunds(async () => ({
      success: false,
      transaction: "",
      errorReason: "invalid_batch_settlement_evm_refund_simulation_failed",
      errorMessage: "reverted",
    }));
    await createClaimer(w.ports, settings, recorder()).pass();
    expect(w.outcomes.at(-1)).toMatchObject({ after: "unlock", outcome: { ok: false } });
    expect(records[0]?.pendingRequest).toBeUndefined();
  });

  it("a refund racing a claim: the batch claims the channel while its request waits for Settle; the refund then claims nothing again", async () => {
    // Verify took the channel's lock for the refund; Settle has not submitted it yet.
    const request = asked(1).refundRequest as NonNullable<ChannelRecord["refundRequest"]>;
    const records = [asked(1, { refundRequest: { ...request, submitted: false } })];
    const onchain = new Map([[id(1), chain({ balance: 1_000_000n })]]);
    const w = world(records, onchain);
    await createClaimer(w.ports, settings, recorder()).pass();
    expect(w.sent).toEqual(["claim 1", "settle"]);
    // Settle submits it; the next pass sends the refund alone: the charges are claimed already.
    (records[0]?.refundRequest as NonNullable<ChannelRecord["refundRequest"]>).submitted = true;
    const pass = await createClaimer(w.ports, settings, recorder()).pass();
    expect(w.sent).toEqual(["claim 1", "settle", `refund ${id(1)} 970000`]);
    expect(pass.events.map((e) => [e.outcome, e.amount])).toEqual([["refunded", "970000"]]);
    expect(onchain.get(id(1))).toMatchObject({ balance: 30_000n, totalClaimed: 30_000n });
  });
  it("one refund per deposit: a request after a refund that landed (its answer lost) sends nothing; after a deposit, one more", async () => {
    const records = [asked(1, {}, "100000")];
    const onchain = new Map([[id(1), chain({ balance: 1_000_000n, totalClaimed: 30_000n })]]);
    const w = world(records, onchain);
    await createClaimer(w.ports, settings, recorder()).pass();
    expect(w.sent).toEqual([`refund ${id(1)} 100000`]);
    // payment-verifier admitted another (a record as before the refund): the chain says it landed.
    const again = (rid: string) =>
      asked(1, {
        pendingRequest: { pendingId: rid, expiresAt: NOW + 60_000 },
        refundRequest: {
          id: rid,
          requestId: `req-${rid}`,
          amount: "",
          cumulative: "30000",
          at: NOW,
          submitted: true,
        },
      });
    records.splice(0, 1, again("refund-b"));
    const pass = await createClaimer(w.ports, settings, recorder()).pass();
    expect(pass.requested).toEqual([]);
    expect(w.sent).toEqual([`refund ${id(1)} 100000`]);
    expect(w.outcomes.at(-1)).toMatchObject({
      after: "unlock",
      outcome: { id: "refund-b", ok: false, errorReason: "invalid_batch_settlement_evm_refund_already_sent" },
    });
    // A new deposit on chain: this deposit's refund goes out.
    const c = onchain.get(id(1)) as NonNullable<ReturnType<typeof onchain.get>>;
    c.balance += 1_000_000n;
    records.splice(0, 1, again("refund-c"));
    await createClaimer(w.ports, settings, recorder()).pass();
    expect(w.sent).toEqual([`refund ${id(1)} 100000`, `refund ${id(1)} 1870000`]);
  });
  it("a refund whose outcome was unknown and then landed is answered on the next pass, never sent twice", async () => {
    const records = [asked(1, {}, "100000")];
    const onchain = new Map([[id(1), chain({ totalClaimed: 30_000n })]]);
    const w = world(records, onchain);
    w.failRefunds(() => Promise.reject(new Error("receipt wait timed out")));
    await createClaimer(w.ports, settings, recorder()).pass();
    expect(w.outcomes).toEqual([{ after: "keep", outcome: expect.objectContaining({ unknown: true }) }]);
    // It landed meanwhile (the chain's nonce moved, 100,000 returned); the request still holds.
    Object.assign(onchain.get(id(1)) ?? {}, { balance: 900_000n, refundNonce: 1n });
    w.failRefunds(() => Promise.reject(new Error("must not be sent again")));
    const pass = await createClaimer(w.ports, settings, recorder()).pass();
    expect(pass.requested).toEqual([]);
    expect(w.sent.filter((x) => x.startsWith("refund"))).toEqual([]);
    expect(w.outcomes.at(-1)).toMatchObject({
      after: "update",
      outcome: {
        id: "refund-1",
        ok: true,
        amount: "100000",
        channelState: { balance: "900000", refundNonce: "1" },
      },
    });
    expect(records[0]).toMatchObject({
      balance: "900000",
      pendingRequest: undefined,
      refundRequest: undefined,
    });
  });
});
