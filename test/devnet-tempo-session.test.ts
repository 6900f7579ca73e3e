// The devnet's Tempo chain with the unmodified mppx server and client: MPP sessions over the
// channel reserve (a contract of ours standing in for the TIP-1034 precompile; opens seeded by the
// devnet's JSON-RPC shim). Fixture in devnet-tempo.support.ts.
import { BaseError, ContractFunctionRevertedError, type Hex, isAddressEqual, zeroAddress } from "viem";
import { getBlockNumber, getTransactionReceipt, readContract, simulateContract } from "viem/actions";
import { Abis } from "viem/tempo";
import { describe, expect, it } from "vitest";
import {
  account,
  balance,
  base,
  chain,
  PRICES,
  payTo,
  RESERVE,
  type Route,
  raw,
  reserveEvents,
  SESSION_DEPOSIT,
  sessionPayer,
  storedChannel,
  transactionsFrom,
  USDC_E,
  useTempoDevnet,
} from "./devnet-tempo.support.ts";

describe("Tempo devnet chain (anvil --network tempo) with the unmodified mppx server and client", () => {
  useTempoDevnet();

  describe("session — channel reserve: a contract of ours standing in for the TIP-1034 precompile; opens seeded by the devnet's JSON-RPC shim", () => {
    it("open with a deposit, 20 voucher-paid requests with no payer transaction, scheduled settles, a top-up, close: the recipient gets exactly the sum of the prices, the payer the rest", async () => {
      const { payer, manager, payerBefore, payToBefore } = await sessionPayer("payer4");
      const reserveBefore = await balance(USDC_E, RESERVE);

      // Open: the first request carries the open transaction (the server broadcasts it) and pays.
      const opened = await manager.fetch(`${base}/cheap`);
      expect(opened.status).toBe(200);
      expect(opened.receipt).toMatchObject({ intent: "session", spent: "1000", units: 1 });
      const channelId = opened.receipt?.channelId as Hex;
      const [openEvent] = await reserveEvents(opened.receipt?.txHash, "ChannelOpened");
      expect(openEvent?.args).toMatchObject({
        channelId,
        payer: payer.address,
        payee: payTo,
        deposit: raw(SESSION_DEPOSIT),
      });
      expect(openEvent?.args.expiringNonceHash).not.toBe(`0x${"0".repeat(64)}`);
      expect(await balance(USDC_E, payer.address)).toBe(payerBefore - raw(SESSION_DEPOSIT));

      // 20 paid requests, each with an off-chain cumulative voucher.
      let spent = raw(PRICES["/cheap"]);
      const settleTxs: Hex[] = [];
      const spentAtSettle: bigint[] = [];
      const firstBlock = await getBlockNumber(chain());
      for (let i = 0; i < 20; i++) {
        const route: Route = i % 2 === 0 ? "/dear" : "/cheap";
        const res = await manager.fetch(`${base}${route}`);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ served: route });
        spent += raw(PRICES[route]);
        expect(res.receipt).toMatchObject({ channelId, spent: String(spent), units: i + 2 });
        if (res.receipt?.txHash) {
          settleTxs.push(res.receipt.txHash as Hex);
          spentAtSettle.push(spent);
        }
      }
      const lastBlock = await getBlockNumber(chain());
      expect(await transactionsFrom(payer.address, firstBlock, lastBlock)).toEqual([]);
      // Scheduled settles at units 10 and 20, sent by the server's operator account.
      expect(settleTxs).toHaveLength(2);
      expect(spentAtSettle).toEqual([5n * raw("0.026"), 10n * raw("0.026")]);
      for (const hash of settleTxs) {
        const settled = await getTransactionReceipt(chain(), { hash });
        expect(isAddressEqual(settled.from, account("facilitator").address)).toBe(true);
        expect(await reserveEvents(hash, "Settled")).toHaveLength(1);
      }
      const afterVouchers = await readContract(chain(), {
        address: RESERVE,
        abi: Abis.tip20ChannelReserve,
        functionName: "getChannelState",
        args: [channelId],
      });
      expect(afterVouchers.settled).toBe(spentAtSettle.at(-1));
      expect(await balance(USDC_E, payTo)).toBe(payToBefore + afterVouchers.settled);

      // Top-up, then requests beyond the first deposit.
      const topUp = await manager.topUp("0.2");
      expect(topUp?.txHash).toMatch(/^0x[0-9a-f]{64}$/);
      const toppedUp = await readContract(chain(), {
        address: RESERVE,
        abi: Abis.tip20ChannelReserve,
        functionName: "getChannelState",
        args: [channelId],
      });
      expect(toppedUp.deposit).toBe(raw(SESSION_DEPOSIT) + raw("0.2"));
      for (let i = 0; i < 4; i++) {
        const res = await manager.fetch(`${base}/dear`);
        expect(res.status).toBe(200);
        spent += raw(PRICES["/dear"]);
        expect(res.receipt?.spent).toBe(String(spent));
      }
      expect(spent > raw(SESSION_DEPOSIT)).toBe(true);

      // Close: the payee gets exactly what was spent, the payer the rest of both deposits.
      const closed = await manager.close();
      const [closeEvent] = await reserveEvents(closed?.txHash, "ChannelClosed");
      expect(closeEvent?.args).toMatchObject({
        channelId,
        settledToPayee: spent,
        refundedToPayer: raw(SESSION_DEPOSIT) + raw("0.2") - spent,
      });
      expect(await balance(USDC_E, payTo)).toBe(payToBefore + spent);
      expect(await balance(USDC_E, payer.address)).toBe(payerBefore - spent);
      expect(await balance(USDC_E, RESERVE)).toBe(reserveBefore);
      // mppx keeps the channel in the store under its id: spent and finalized, persisted in Redis.
      expect(await storedChannel(channelId)).toMatchObject({ spent, units: 25, finalized: true });
    });

    it("verify before the work, collect after it: a failed call moves the channel's spent by nothing", async () => {
      const { payer, manager, payerBefore, payToBefore } = await sessionPayer("payer6");
      const price = raw(PRICES["/cheap"]);

      const opened = await manager.fetch(`${base}/work`);
      expect(opened.status).toBe(200);
      const channelId = opened.receipt?.channelId as Hex;
      const spentInStore = async () => (await storedChannel(channelId)).spent;
      expect(await spentInStore()).toBe(price);

      const failed = await manager.fetch(`${base}/work?outcome=fail`);
      expect(failed.status).toBe(502);
      expect(await spentInStore()).toBe(price);
      for (let i = 0; i < 2; i++) expect((await manager.fetch(`${base}/work`)).status).toBe(200);
      expect(await spentInStore()).toBe(3n * price);

      await manager.close();
      expect(await balance(USDC_E, payTo)).toBe(payToBefore + 3n * price);
      expect(await balance(USDC_E, payer.address)).toBe(payerBefore - 3n * price);
    });

    it("the stand-in refuses an open the shim has not seeded (sent straight to anvil): ExpiringNonceHashNotSet", async () => {
      const payer = account("payer7");
      const error = await simulateContract(chain(), {
        account: payer,
        address: RESERVE,
        abi: Abis.tip20ChannelReserve,
        functionName: "open",
        args: [payTo, zeroAddress, USDC_E, raw("0.01"), `0x${"ab".repeat(32)}`, zeroAddress],
      }).catch((err: BaseError) => err);
      expect(error).toBeInstanceOf(BaseError);
      const reverted = (error as BaseError).walk((e) => e instanceof ContractFunctionRevertedError);
      expect((reverted as ContractFunctionRevertedError | null)?.data?.errorName).toBe(
        "ExpiringNonceHashNotSet",
      );
      expect(await balance(USDC_E, payer.address)).toBe(raw("1000"));
    });
  });
});
