// The x402 `batch-settlement` scheme end to end with nothing but the official SDK (@x402/evm
// 2.27.0 client, server scheme with RedisChannelStorage, in-process facilitator) against a devnet:
// no Tollgate service is involved. The escrow and collector are our own contracts with the
// published interface, standing in for the canonical deployment at the canonical addresses.
// This file: the canonical deployment, the channel terms, and one payer's channel from deposit to
// refund. Two replicas, the refund over HTTP and leaving without the server are in
// devnet-batch-settlement-exits.test.ts; the fixture in devnet-batch-settlement.support.ts.

import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS } from "@tollgate/devnet";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import * as sdk from "@x402/evm";
import { computeChannelId, signVoucher } from "@x402/evm/batch-settlement/client";
import type { Channel } from "@x402/evm/batch-settlement/server";
import { type Hex, hashTypedData, parseEventLogs } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import {
  A,
  abi,
  authorizer,
  balanceOf,
  base,
  chain,
  channelOnChain,
  collectorAbi,
  DEPOSIT,
  delivered,
  devnet,
  ERR,
  EXPENSIVE,
  facilitator,
  network,
  outcome,
  PRICE,
  pay,
  payTo,
  probe,
  read,
  record,
  SCHEME,
  usdc,
  useBatchDevnet,
  WITHDRAW_DELAY,
} from "./devnet-batch-settlement.support.ts";
import { batchPayer } from "./support/x402-batch.ts";

describe("x402 batch-settlement with the official SDK on the devnet (our own contracts stand in for the canonical deployment)", () => {
  useBatchDevnet();

  it("places the escrow and collector at the SDK's canonical addresses and records them in devnet.json", async () => {
    expect(BATCH_SETTLEMENT_ADDRESS).toBe(sdk.BATCH_SETTLEMENT_ADDRESS);
    expect(ERC3009_DEPOSIT_COLLECTOR_ADDRESS).toBe(sdk.ERC3009_DEPOSIT_COLLECTOR_ADDRESS);
    expect(devnet.chains.settlement?.contracts).toMatchObject({
      batchSettlement: sdk.BATCH_SETTLEMENT_ADDRESS,
      erc3009Collector: sdk.ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
    });
    expect(devnet.demo.settlement).toMatchObject({
      batchSettlement: sdk.BATCH_SETTLEMENT_ADDRESS,
      erc3009Collector: sdk.ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
    });
    expect(await read("MIN_WITHDRAW_DELAY", [])).toBe(900);
    expect(await read("MAX_WITHDRAW_DELAY", [])).toBe(2_592_000);
    const collectorTarget = await chain.readContract({
      address: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      abi: collectorAbi,
      functionName: "x402BatchSettlement",
    });
    expect(collectorTarget).toBe(BATCH_SETTLEMENT_ADDRESS);
  });

  it("offers channel terms the SDK fills in: the server's authorizer, the withdraw delay, a minimum deposit of 10 prices by default", async () => {
    const [paid] = (await probe("/paid")).accepts;
    const [plain] = (await probe("/default-deposit")).accepts;
    expect(paid).toMatchObject({
      scheme: SCHEME,
      amount: String(PRICE),
      asset: usdc().address,
      extra: {
        receiverAuthorizer: authorizer.address,
        withdrawDelay: WITHDRAW_DELAY,
        minDeposit: String(DEPOSIT),
        name: "USD Coin",
        version: "2",
      },
    });
    expect(plain?.extra.minDeposit).toBe(String(10n * PRICE));
    // Payers hold 1,000 USDC each: 10,000 default deposits at this price, 10,000 of /paid's.
    expect(await balanceOf(devnet.demo.settlement.payers[0] as `0x${string}`)).toBe(1_000_000_000n);
  });

  describe("one payer, one channel", () => {
    const payer = () => batchPayer(devnet, "payer1");
    let client: ReturnType<typeof batchPayer>;
    let channelId: Hex;
    let start: bigint;
    /** What the server has charged on the channel so far (sum of the prices of delivered calls). */
    let charged = 0n;
    /** One /paid call through the official client: answered 200; its decoded PAYMENT-RESPONSE. */
    const paidCall = async () => {
      const res = await client.fetch(`${base}/paid`);
      expect(res.status).toBe(200);
      charged += PRICE;
      return decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
    };

    it("the first paid call deposits: the facilitator submits the payer's signed deposit and it lands on chain", async () => {
      client = payer();
      start = await balanceOf(client.address);
      const settle = await paidCall();
      expect(settle).toMatchObject({
        success: true,
        amount: String(DEPOSIT),
        extra: { chargedAmount: String(PRICE), channelState: { chargedCumulativeAmount: String(PRICE) } },
      });

      const receipt = await chain.getTransactionReceipt({ hash: settle.transaction as Hex });
      expect(receipt.status).toBe("success");
      expect(receipt.from).toBe(facilitator.address.toLowerCase());
      expect(receipt.to).toBe(BATCH_SETTLEMENT_ADDRESS.toLowerCase());
      const [deposited] = parseEventLogs({ abi, logs: receipt.logs, eventName: "Deposited" }) as unknown as {
        args: { channelId: Hex; amount: bigint; newBalance: bigint };
      }[];
      expect(deposited?.args).toMatchObject({ amount: DEPOSIT, newBalance: DEPOSIT });
      channelId = deposited?.args.channelId as Hex;

      const [offered] = (await probe("/paid")).accepts;
      const config = client.scheme.buildChannelConfig(offered as never);
      expect(computeChannelId(config, network())).toBe(channelId);
      expect(await read("getChannelId", [config])).toBe(channelId);

      expect(await channelOnChain(channelId)).toEqual([DEPOSIT, 0n]);
      expect(await balanceOf(client.address)).toBe(start - DEPOSIT);
      expect(await balanceOf(BATCH_SETTLEMENT_ADDRESS)).toBe(DEPOSIT);
      expect(await balanceOf(ERC3009_DEPOSIT_COLLECTOR_ADDRESS)).toBe(0n);
      const stored = await record(channelId);
      expect(stored).toMatchObject({
        chargedCumulativeAmount: String(PRICE),
        balance: String(DEPOSIT),
        totalClaimed: "0",
      });
      expect(stored?.pendingRequest).toBeUndefined();
    });

    it("20 more paid calls are verified off-chain: no transaction on the chain, no facilitator call, no token moved", async () => {
      const block = await chain.getBlockNumber();
      const calls = facilitator.calls.length;
      for (let i = 0; i < 20; i++) {
        expect(await paidCall()).toMatchObject({
          success: true,
          transaction: "",
          extra: { chargedAmount: String(PRICE), channelState: { chargedCumulativeAmount: String(charged) } },
        });
      }
      expect(await chain.getBlockNumber()).toBe(block);
      expect(facilitator.calls.length).toBe(calls);
      expect(await balanceOf(client.address)).toBe(start - DEPOSIT);
      expect(await channelOnChain(channelId)).toEqual([DEPOSIT, 0n]);
      expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(charged));
    });

    it("a call whose handler fails consumes nothing: the reservation is released and the next voucher is the same amount", async () => {
      const res = await client.fetch(`${base}/fails`);
      expect(res.status).toBe(502);
      expect(res.headers.get("payment-response")).toBeNull();
      const stored = await record(channelId);
      expect(stored?.chargedCumulativeAmount).toBe(String(charged));
      expect(stored?.pendingRequest).toBeUndefined();

      expect((await paidCall()).extra?.chargedAmount).toBe(String(PRICE));
      expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(charged));
    });

    it("a replayed voucher is refused with the corrective 402 carrying the channel state, and not served", async () => {
      const served = delivered.get("/paid");
      const replay = client.signatures[1] ?? "";
      const res = await fetch(`${base}/paid`, { headers: { "PAYMENT-SIGNATURE": replay } });
      expect(res.status).toBe(402);
      expect(res.headers.get("payment-response")).toBeNull();
      const required = decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
      expect(required.error).toBe(ERR.mismatch);
      expect(required.accepts[0]?.extra.channelState).toMatchObject({
        channelId,
        chargedCumulativeAmount: String(charged),
      });
      expect(delivered.get("/paid")).toBe(served);
      expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(charged));
    });

    it("a voucher below the charged amount is refused with the corrective 402 and the payer's last signed voucher", async () => {
      const required = await probe("/paid");
      const accepted = required.accepts[0] as PaymentRequired["accepts"][number];
      const config = client.scheme.buildChannelConfig(accepted);
      const voucher = await signVoucher(client.account, channelId, String(charged - PRICE), network());
      const sent = await pay("/paid", {
        x402Version: 2,
        accepted,
        payload: { type: "voucher", channelConfig: config, voucher },
      });
      expect(sent.status).toBe(402);
      expect(sent.settled).toBeNull();
      expect(sent.required?.error).toBe(ERR.mismatch);
      const stored = (await record(channelId)) as Channel;
      expect(sent.required?.accepts[0]?.extra).toMatchObject({
        channelState: { chargedCumulativeAmount: String(charged) },
        voucherState: { signedMaxClaimable: String(charged), signature: stored.signature },
      });
      expect(stored.chargedCumulativeAmount).toBe(String(charged));
    });

    it("a client that lost its local state resynchronises through the corrective 402 and pays exactly one price", async () => {
      const fresh = payer();
      const res = await fresh.fetch(`${base}/paid`);
      expect(res.status).toBe(200);
      charged += PRICE;
      // First voucher from the on-chain baseline (totalClaimed 0) was refused, the retry matched.
      expect(fresh.signatures).toHaveLength(2);
      expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(charged));
      expect(await balanceOf(fresh.address)).toBe(start - DEPOSIT);
    });

    it("a voucher above the deposit is refused as exceeding the channel balance, and not served", async () => {
      const served = delivered.get("/expensive") ?? 0;
      const required = await probe("/expensive");
      const accepted = required.accepts[0] as PaymentRequired["accepts"][number];
      const voucher = await signVoucher(client.account, channelId, String(charged + EXPENSIVE), network());
      const sent = await pay("/expensive", {
        x402Version: 2,
        accepted,
        payload: { type: "voucher", channelConfig: client.scheme.buildChannelConfig(accepted), voucher },
      });
      expect(sent.status).toBe(402);
      expect(sent.required?.error).toBe(ERR.exceedsBalance);
      expect(delivered.get("/expensive") ?? 0).toBe(served);
      const stored = await record(channelId);
      expect(stored?.chargedCumulativeAmount).toBe(String(charged));
      expect(stored?.pendingRequest).toBeUndefined();
    });

    it("the contract enforces the published rules: ceilings, balances, signatures, collector caller, delay bounds, refund nonces", async () => {
      const stored = (await record(channelId)) as Channel;
      const config = stored.channelConfig;
      const chainId = devnet.demo.settlement.chainId;
      const domain = { ...sdk.BATCH_SETTLEMENT_DOMAIN, chainId, verifyingContract: BATCH_SETTLEMENT_ADDRESS };
      const claimRow = (maxClaimableAmount: bigint, signature: Hex, totalClaimed: bigint) => ({
        voucher: { channel: config, maxClaimableAmount },
        signature,
        totalClaimed,
      });
      const authorize = (rows: ReturnType<typeof claimRow>[], signer = authorizer) =>
        signer.signTypedData({
          domain,
          types: sdk.claimBatchTypes,
          primaryType: "ClaimBatch",
          message: {
            claims: rows.map((r) => ({
              channelId,
              maxClaimableAmount: r.voucher.maxClaimableAmount,
              totalClaimed: r.totalClaimed,
            })),
          },
        });
      const claim = async (rows: ReturnType<typeof claimRow>[], signer = authorizer) =>
        outcome("claimWithSignature", [rows, await authorize(rows, signer)]);
      const signed = BigInt(stored.signedMaxClaimable);
      const voucherSig = stored.signature as Hex;

      // The on-chain digests are the SDK's EIP-712 hashes (same domain, same types).
      const digest = await chain.readContract({
        address: BATCH_SETTLEMENT_ADDRESS,
        abi,
        functionName: "getVoucherDigest",
        args: [channelId, signed],
      });
      expect(digest).toBe(
        hashTypedData({
          domain,
          types: sdk.voucherTypes,
          primaryType: "Voucher",
          message: { channelId, maxClaimableAmount: signed },
        }),
      );

      expect(await claim([claimRow(signed, voucherSig, signed)])).toBe("no revert");
      expect(await claim([claimRow(signed, voucherSig, signed + 1n)])).toBe("ClaimExceedsCeiling");
      const overDeposit = await signVoucher(client.account, channelId, String(DEPOSIT + 1n), network());
      expect(await claim([claimRow(DEPOSIT + 1n, overDeposit.signature as Hex, DEPOSIT + 1n)])).toBe(
        "ClaimExceedsBalance",
      );
      const stranger = privateKeyToAccount(generatePrivateKey());
      expect(await claim([claimRow(signed, voucherSig, signed)], stranger)).toBe("InvalidSignature");
      const forged = await signVoucher(stranger, channelId, String(signed), network());
      expect(await claim([claimRow(signed, forged.signature as Hex, signed)])).toBe("InvalidSignature");

      expect(
        await outcome("collect", [config.payer, config.token, 1n, channelId, "0x"], {
          to: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
          contractAbi: collectorAbi,
        }),
      ).toBe("OnlyX402BatchSettlement");
      expect(
        await outcome("deposit", [
          { ...config, withdrawDelay: 899 },
          1n,
          ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
          "0x",
        ]),
      ).toBe("WithdrawDelayOutOfRange");
      const refundSig = (nonce: bigint) =>
        authorizer.signTypedData({
          domain,
          types: sdk.refundTypes,
          primaryType: "Refund",
          message: { channelId, nonce, amount: 1n },
        });
      const refund = async (nonce: bigint) =>
        outcome("refundWithSignature", [config, 1n, nonce, await refundSig(nonce)]);
      expect(await refund(0n)).toBe("no revert");
      expect(await refund(1n)).toBe("InvalidRefundNonce");
      expect(await outcome("initiateWithdraw", [config, 1n])).toBe("InvalidChannel");
    });

    it("the channel manager's claimAndSettle pays payTo exactly the sum of the prices of the delivered calls", async () => {
      expect(charged).toBe(BigInt(delivered.get("/paid") ?? 0) * PRICE);
      const manager = A.scheme.createChannelManager(facilitator, network(), usdc().address);
      const before = await balanceOf(payTo());
      const { claims, settle } = await manager.claimAndSettle();
      expect(claims).toEqual([{ vouchers: 1, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) }]);
      const receipt = await chain.getTransactionReceipt({ hash: settle?.transaction as Hex });
      const [settled] = parseEventLogs({ abi, logs: receipt.logs, eventName: "Settled" }) as unknown as {
        args: { receiver: string; amount: bigint };
      }[];
      expect(settled?.args).toMatchObject({ receiver: payTo(), amount: charged });

      expect(await balanceOf(payTo())).toBe(before + charged);
      expect(await channelOnChain(channelId)).toEqual([DEPOSIT, charged]);
      expect(await read("receivers", [payTo(), usdc().address])).toEqual([charged, charged]);
      expect((await record(channelId))?.totalClaimed).toBe(String(charged));
    });

    it("refund() returns the rest of the deposit to the payer and forgets the channel", async () => {
      const manager = A.scheme.createChannelManager(facilitator, network(), usdc().address);
      const [refund] = await manager.refund([channelId]);
      expect(refund?.channel).toBe(channelId);
      expect(await balanceOf(client.address)).toBe(start - charged);
      expect(await channelOnChain(channelId)).toEqual([charged, charged]);
      expect(await read("refundNonce", [channelId])).toBe(1n);
      expect(await record(channelId)).toBeUndefined();
    });

    it("after the refund an old voucher is refused as below what was claimed on chain", async () => {
      const served = delivered.get("/paid");
      const res = await fetch(`${base}/paid`, {
        headers: { "PAYMENT-SIGNATURE": client.signatures[1] ?? "" },
      });
      expect(res.status).toBe(402);
      const required = decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
      expect(required.error).toBe(ERR.belowClaimed);
      expect(delivered.get("/paid")).toBe(served);
    });
  });
});
