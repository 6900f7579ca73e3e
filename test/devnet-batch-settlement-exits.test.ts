// The x402 `batch-settlement` scheme end to end with nothing but the official SDK, against a devnet
// (fixture: devnet-batch-settlement.support.ts): Verify and Settle on two replicas sharing the
// channel storage, a refund the payer asks for over HTTP, and a payer leaving without the server
// through the timed withdrawal.

import { BATCH_SETTLEMENT_ADDRESS } from "@tollgate/devnet";
import {
  decodePaymentSignatureHeader,
  encodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from "@x402/core/http";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { computeChannelId } from "@x402/evm/batch-settlement/client";
import { createWalletClient, type Hex, http, parseEventLogs } from "viem";
import { describe, expect, it } from "vitest";
import {
  A,
  abi,
  B,
  balanceOf,
  base,
  chain,
  channelOnChain,
  DEPOSIT,
  delivered,
  devnet,
  ERR,
  facilitator,
  network,
  outcome,
  PRICE,
  payTo,
  probe,
  type Replica,
  read,
  record,
  usdc,
  useBatchDevnet,
  WITHDRAW_DELAY,
} from "./devnet-batch-settlement.support.ts";
import { batchPayer } from "./support/x402-batch.ts";

describe("x402 batch-settlement with the official SDK on the devnet (our own contracts stand in for the canonical deployment)", () => {
  useBatchDevnet();

  it("Verify and Settle can run on two replicas with the payload decoded twice, once the pending id is handed over", async () => {
    const client = batchPayer(devnet, "payer2");
    const start = await balanceOf(client.address);
    const required = await probe("/paid");
    const requirements = required.accepts[0] as PaymentRequired["accepts"][number];
    const channelId = computeChannelId(client.scheme.buildChannelConfig(requirements), network());
    /** What the gateway would carry between the two RPCs: the header, and the verifier's pending id. */
    const nextHeader = async () => {
      const payload = await client.client.createPaymentPayload(required);
      return { payload, header: encodePaymentSignatureHeader(payload) };
    };
    const handOver = async (replica: Replica, header: string, pendingId: string | undefined) => {
      const payload = decodePaymentSignatureHeader(header);
      replica.scheme.mergeRequestContext(payload, {
        channelId,
        pendingId,
        reservationCommitted: true,
        // Must be set: a cancel without it deletes the channel record (see the report).
        channelSnapshot: await record(channelId),
      });
      return payload;
    };

    /** The client reads the PAYMENT-RESPONSE the gateway would send. */
    const deliver = (payload: PaymentPayload, settled: object) =>
      client.http.processPaymentResult(
        payload,
        (name) =>
          name.toUpperCase() === "PAYMENT-RESPONSE" ? encodePaymentResponseHeader(settled as never) : null,
        200,
      );

    // The deposit: verified on A, settled (submitted on chain) on B.
    const opening = await nextHeader();
    const depositOnA = decodePaymentSignatureHeader(opening.header);
    expect(await A.server.verifyPayment(depositOnA, requirements)).toMatchObject({ isValid: true });
    const depositPending = A.scheme.readRequestContext(depositOnA)?.pendingId;
    const deposited = await B.server.settlePayment(
      await handOver(B, opening.header, depositPending),
      requirements,
    );
    expect(deposited).toMatchObject({
      success: true,
      amount: String(DEPOSIT),
      extra: { chargedAmount: String(PRICE), channelState: { chargedCumulativeAmount: String(PRICE) } },
    });
    expect(await channelOnChain(channelId)).toEqual([DEPOSIT, 0n]);
    expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(PRICE));
    await deliver(opening.payload, deposited);

    // A voucher: replica A verifies (the Verify RPC) and reserves the channel under a pending id...
    const first = await nextHeader();
    const onA = decodePaymentSignatureHeader(first.header);
    expect(await A.server.verifyPayment(onA, requirements)).toMatchObject({ isValid: true });
    const pendingId = A.scheme.readRequestContext(onA)?.pendingId;
    expect((await record(channelId))?.pendingRequest?.pendingId).toBe(pendingId);

    // ...replica B gets the Settle RPC with the payload decoded again: without the pending id the
    // SDK takes it for a concurrent request and commits nothing.
    await expect(
      B.server.settlePayment(decodePaymentSignatureHeader(first.header), requirements),
    ).rejects.toMatchObject({ errorReason: ERR.busy });
    expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(PRICE));

    // Handed the pending id, replica B commits the charge, with no facilitator call.
    const calls = facilitator.calls.length;
    const settled = await B.server.settlePayment(await handOver(B, first.header, pendingId), requirements);
    expect(settled).toMatchObject({
      success: true,
      transaction: "",
      extra: { chargedAmount: String(PRICE), channelState: { chargedCumulativeAmount: String(2n * PRICE) } },
    });
    expect(facilitator.calls.length).toBe(calls);
    expect((await record(channelId))?.pendingRequest).toBeUndefined();
    await deliver(first.payload, settled);

    // A second request on the channel while one is reserved gets "channel busy", on any replica.
    const second = await nextHeader();
    const again = decodePaymentSignatureHeader(second.header);
    expect(await A.server.verifyPayment(again, requirements)).toMatchObject({ isValid: true });
    const pending2 = A.scheme.readRequestContext(again)?.pendingId;
    expect(
      await B.server.verifyPayment(decodePaymentSignatureHeader(second.header), requirements),
    ).toMatchObject({
      isValid: false,
      invalidReason: ERR.busy,
    });

    // The handler failed: replica B releases the reservation (the cancel path), nothing is charged...
    await B.server
      .createPaymentCancellationDispatcher(await handOver(B, second.header, pending2), requirements)
      .cancel({ reason: "handler_failed", responseStatus: 502 });
    const released = await record(channelId);
    expect(released?.pendingRequest).toBeUndefined();
    expect(released?.chargedCumulativeAmount).toBe(String(2n * PRICE));

    // ...so the same voucher is accepted on retry.
    const retry = decodePaymentSignatureHeader(second.header);
    expect(await B.server.verifyPayment(retry, requirements)).toMatchObject({ isValid: true });
    expect(await B.server.settlePayment(retry, requirements)).toMatchObject({ success: true });
    expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(3n * PRICE));

    // A refund with vouchers still unclaimed claims and refunds in one multicall transaction.
    const manager = B.scheme.createChannelManager(facilitator, network(), usdc().address);
    const [refund] = await manager.refund([channelId]);
    const receipt = await chain.getTransactionReceipt({ hash: refund?.transaction as Hex });
    const events = parseEventLogs({ abi, logs: receipt.logs }).map((l) => l.eventName);
    expect(events).toEqual(expect.arrayContaining(["Claimed", "Refunded"]));
    expect(await channelOnChain(channelId)).toEqual([3n * PRICE, 3n * PRICE]);
    expect(await balanceOf(client.address)).toBe(start - 3n * PRICE);
    const before = await balanceOf(payTo());
    await manager.settle();
    expect(await balanceOf(payTo())).toBe(before + 3n * PRICE);
  });

  it("the payer can ask for its refund over HTTP: the server claims what it charged and returns the rest in one transaction", async () => {
    const client = batchPayer(devnet, "payer4");
    const start = await balanceOf(client.address);
    expect((await client.fetch(`${base}/paid`)).status).toBe(200);
    expect((await client.fetch(`${base}/paid`)).status).toBe(200);
    const channelId = computeChannelId(
      client.scheme.buildChannelConfig((await probe("/paid")).accepts[0] as never),
      network(),
    );
    const served = delivered.get("/paid");

    const refund = await client.scheme.refund(`${base}/paid`);
    expect(refund).toMatchObject({ success: true, amount: String(DEPOSIT - 2n * PRICE) });
    const receipt = await chain.getTransactionReceipt({ hash: refund.transaction as Hex });
    const events = parseEventLogs({ abi, logs: receipt.logs }).map((l) => l.eventName);
    expect(events).toEqual(expect.arrayContaining(["Claimed", "Refunded"]));
    expect(await balanceOf(client.address)).toBe(start - 2n * PRICE);
    expect(await channelOnChain(channelId)).toEqual([2n * PRICE, 2n * PRICE]);
    expect(await record(channelId)).toBeUndefined();
    expect(delivered.get("/paid")).toBe(served);
  });

  // Moves the devnet clock forward: keep it last.
  it("a payer can leave without the server: timed withdrawal after the delay, minus what the server claimed meanwhile", async () => {
    const client = batchPayer(devnet, "payer3");
    const start = await balanceOf(client.address);
    expect((await client.fetch(`${base}/paid`)).status).toBe(200);
    const config = client.scheme.buildChannelConfig((await probe("/paid")).accepts[0] as never);
    const channelId = computeChannelId(config, network());
    const wallet = createWalletClient({
      account: client.account,
      transport: http(devnet.chains.settlement?.rpcUrl, { retryCount: 0 }),
    });
    const send = async (functionName: string, args: unknown[]) => {
      const hash = await wallet.writeContract({
        address: BATCH_SETTLEMENT_ADDRESS,
        abi,
        functionName,
        args,
        chain: null,
      });
      return chain.waitForTransactionReceipt({ hash });
    };
    const finalize = () => outcome("finalizeWithdraw", [config], { from: client.address });

    expect((await send("initiateWithdraw", [config, DEPOSIT])).status).toBe("success");
    const [amount, initiatedAt] = await read<readonly [bigint, number]>("pendingWithdrawals", [channelId]);
    expect(amount).toBe(DEPOSIT);
    expect(initiatedAt).toBeGreaterThan(0);
    expect(await finalize()).toBe("WithdrawDelayNotElapsed");

    // Within the delay the server claims the voucher it holds.
    const manager = A.scheme.createChannelManager(facilitator, network(), usdc().address);
    const claims = await manager.claim({
      selectClaimChannels: (channels) => channels.filter((c) => c.channelId === channelId),
    });
    expect(claims).toHaveLength(1);
    expect(await channelOnChain(channelId)).toEqual([DEPOSIT, PRICE]);

    await chain.request({ method: "evm_increaseTime" as never, params: [WITHDRAW_DELAY] as never });
    await chain.request({ method: "evm_mine" as never });
    expect(await finalize()).toBe("no revert");
    expect((await send("finalizeWithdraw", [config])).status).toBe("success");
    expect(await balanceOf(client.address)).toBe(start - PRICE);
    expect(await channelOnChain(channelId)).toEqual([PRICE, PRICE]);
    expect(await read("pendingWithdrawals", [channelId])).toEqual([0n, 0]);
  });
});
