// An x402-batch deposit whose settlement this replica took over from one that died running it: the
// dead owner's SDK may have sent the deposit already, and sending it again would revert (its
// authorization is used). Found on chain, the deposit is recorded as the SDK records one that
// landed, and the call is settled by that transaction, charged once.
import type { Logger } from "@tollgate/platform";
import type { PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { ChannelStorage } from "@x402/evm/batch-settlement/server";
import { encodeAbiParameters, type Hex, keccak256 } from "viem";
import type { SettlementChain } from "../adapters/settlement-chain.ts";
import type { SettleResult } from "../core/types.ts";
import type { X402Protocol } from "../protocols/x402.ts";
import type { BatchPayment, VoucherPayload } from "./x402-batch-credential.ts";

/** How long a takeover waits for a deposit the dead owner may have sent to be mined. */
const TAKEOVER_WAIT_MS = 15_000;
const TAKEOVER_POLL_MS = 250;

interface DepositTakeoverDeps {
  /** Reads the settlement chain: without it, the deposit runs again here. */
  chain: SettlementChain | undefined;
  storage: ChannelStorage;
  protocol: X402Protocol;
  logger: Logger;
}

/**
 * A deposit taken over from a replica that died running it: the SDK there may have sent the
 * deposit, and the SDK here would send it again (it reverts: the authorization is used). Its
 * ERC-3009 authorization's use is looked for on chain, waited for (up to 15 s) while the dead
 * owner's transaction may still be in the mempool; found, the channel is recorded as the SDK
 * records a deposit that landed (this voucher charged, the lock let go) and the call is settled
 * by that transaction; already recorded with this voucher charged (the owner died after that),
 * answered from the record. Not found (never sent, a Permit2 deposit, no chain reader): undefined,
 * the deposit runs here.
 */
export async function depositedByDeadOwner(
  d: DepositTakeoverDeps,
  payment: BatchPayment,
  requirements: PaymentRequirements,
  hold: string,
): Promise<SettleResult | undefined> {
  const chain = d.chain;
  const raw = payment.payload.payload as VoucherPayload & {
    deposit: { amount: string; authorization: { erc3009Authorization?: { salt: Hex } } };
  };
  const salt = raw.deposit.authorization.erc3009Authorization?.salt;
  if (!chain || !salt) return undefined;
  // The SDK's buildErc3009DepositNonce: the deposit's ERC-3009 nonce binds channel and salt.
  const nonce = keccak256(
    encodeAbiParameters([{ type: "bytes32" }, { type: "uint256" }], [payment.channelId, BigInt(salt)]),
  );
  const until = Date.now() + TAKEOVER_WAIT_MS;
  let used: { transaction: Hex; canceled?: true } | undefined;
  for (;;) {
    used = await chain
      .authorizationUse(requirements.asset as Hex, payment.payer, nonce)
      .catch(() => undefined);
    if (used || Date.now() >= until) break;
    await new Promise((r) => setTimeout(r, TAKEOVER_POLL_MS));
  }
  // Canceled by the payer: no deposit landed (the SDK's own run here is refused, as it should be).
  if (!used || used.canceled) return undefined;
  const now = Date.now();
  // As the SDK's handleAfterSettle for a deposit: the voucher charged, the lock let go.
  const updated = await d.storage.updateChannel(payment.channelId, (current) => {
    if (!current || current.pendingRequest?.pendingId !== hold) return current;
    return {
      channelId: current.channelId,
      channelConfig: current.channelConfig, // set from this payload at Verify
      chargedCumulativeAmount: (
        BigInt(current.chargedCumulativeAmount) + BigInt(requirements.amount)
      ).toString(),
      signedMaxClaimable: raw.voucher.maxClaimableAmount,
      signature: raw.voucher.signature as Hex,
      balance: (BigInt(current.balance) + BigInt(raw.deposit.amount)).toString(),
      totalClaimed: current.totalClaimed,
      withdrawRequestedAt: current.withdrawRequestedAt,
      refundNonce: current.refundNonce,
      onchainSyncedAt: now,
      lastRequestTimestamp: now,
    };
  });
  const channel = updated.channel;
  if (!channel) return undefined;
  // The lock no longer this call's, the record's last charged voucher this one: the dead owner
  // (or a takeover that died in its turn) recorded this deposit and charged this call; answered
  // again from the record, not charged twice (the SDK would send the used deposit again).
  const recorded =
    updated.status === "updated" || channel.signature.toLowerCase() === raw.voucher.signature.toLowerCase();
  // Else the channel moved on without it: the facilitator's answer decides.
  if (!recorded) return undefined;
  d.logger.info({ transaction: used.transaction }, "x402-batch deposit sent by a dead replica landed");
  const result: SettleResponse = {
    success: true,
    payer: payment.payer,
    transaction: used.transaction,
    network: requirements.network,
    amount: raw.deposit.amount,
    extra: {
      channelState: {
        channelId: channel.channelId,
        balance: channel.balance,
        totalClaimed: channel.totalClaimed,
        withdrawRequestedAt: channel.withdrawRequestedAt,
        refundNonce: String(channel.refundNonce),
        chargedCumulativeAmount: channel.chargedCumulativeAmount,
      },
      chargedAmount: requirements.amount,
    },
  };
  return {
    ok: true,
    collection: {
      kind: "accrual",
      channel: payment.channelId,
      amount: requirements.amount,
      cumulative: channel.chargedCumulativeAmount,
      transaction: used.transaction,
    },
    receipt: [d.protocol.receipt(result)],
  };
}
