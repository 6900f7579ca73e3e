// MPP session channels settled on a schedule, in ONE place: the worker replica holding the Redis
// lease walks the channels payment-verifier keeps (its mppx state in Redis), and settles each one
// that is due (core/session-settlement.ts) with mppx's own tempo.settle, signed by the channels'
// operator key. Never in the request path: a settle there would race other replicas (one reverts,
// and a call already charged would answer an error). Each settlement is one `channel_settled`
// event. Cost per tick: one Redis read per open channel, and one eth_call per channel holding
// unsettled charges (the reserve's state, to see a close the payer requested on chain).
import type { SettlementEventV2 } from "@tollgate/events";
import type { MppxState, TempoClient } from "@tollgate/payment-rails";
import type { Logger } from "@tollgate/platform";
import { tempo } from "mppx/server";
import type { Address, Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { readContract } from "viem/actions";
import { Abis } from "viem/tempo";
import type { WorkerMetrics } from "../core/metrics.ts";
import {
  channelSettledEvent,
  type DueReason,
  type SettleSchedule,
  type StoredChannel,
  settleableVoucher,
  settledForGood,
  settlementDue,
} from "../core/session-settlement.ts";
import type { Lease } from "./lease.ts";

export interface SessionSettlementOptions {
  state: MppxState;
  client: TempoClient;
  account: PrivateKeyAccount;
  feeToken: Address;
  schedule: SettleSchedule & { tickMs: number };
  lease: Lease;
  publish(event: SettlementEventV2): void;
  logger: Logger;
  metrics: WorkerMetrics;
  now?: () => number;
}

interface SettledChannel {
  channelId: string;
  transaction: string;
  reason: DueReason;
}

export interface SessionSettlement {
  /** One pass over the channels (the timer runs it every tick); what it settled. */
  tick(): Promise<SettledChannel[]>;
  stop(): Promise<void>;
}

export function startSessionSettlement(o: SessionSettlementOptions): SessionSettlement {
  const now = o.now ?? Date.now;
  const log = o.logger.child({ component: "session-settlement" });

  /** The payer asked the reserve to close the channel (unilaterally), so it must settle now. */
  const closeRequestedOnChain = async (channel: StoredChannel & { escrowContract?: Address }) => {
    if (!channel.escrowContract) return false;
    const state = await readContract(o.client, {
      address: channel.escrowContract,
      abi: Abis.tip20ChannelReserve,
      functionName: "getChannelState",
      args: [channel.channelId as Hex],
    });
    return Number(state.closeRequestedAt) !== 0;
  };

  const settleOne = async (id: string): Promise<SettledChannel | undefined> => {
    const channel = (await o.state.channels.get(id)) as (StoredChannel & { escrowContract?: Address }) | null;
    if (settledForGood(channel)) {
      await o.state.forgetChannel(id);
      return undefined;
    }
    const stored = channel as StoredChannel & { escrowContract?: Address };
    // Only a channel that spent beyond what is settled can owe anything, leaving or not.
    const owes = stored.spent > stored.settledOnChain;
    const requestedOnChain = owes && (await closeRequestedOnChain(stored));
    const voucher = settleableVoucher(stored, requestedOnChain);
    // mppx marks a cooperative close in progress the same way: payment-verifier is closing it now
    // (capturing everything spent), so a settle here would only race that close.
    if (stored.closeRequestedAt !== 0n && !requestedOnChain) return undefined;
    const reason = settlementDue(stored, o.schedule, now(), requestedOnChain);
    if (!reason || !voucher) return undefined;
    let reported: { delta: bigint; amount: bigint } | undefined;
    // mppx settles the channel's highest voucher: it is shown the settleable one instead (the same
    // when the payer is not a price ahead); what it writes back goes to the channel as it is then.
    const view = {
      getChannel: async () => ({
        ...stored,
        highestVoucher: voucher,
        highestVoucherAmount: voucher.cumulativeAmount,
      }),
      updateChannel: (channelId: string, fn: (current: unknown) => unknown) =>
        o.state.channels.update(channelId, (current: unknown) => {
          const next = fn(current);
          return next ? { op: "set", value: next, result: next } : { op: "delete", result: null };
        }),
    };
    const transaction = await tempo.settle(view as never, o.client, id as Hex, {
      account: o.account,
      feeToken: o.feeToken,
      onSessionSettlement: (ctx) => {
        reported = { delta: ctx.delta, amount: ctx.amount };
      },
    });
    const delta = reported?.delta ?? voucher.cumulativeAmount - stored.settledOnChain;
    const settled = reported?.amount ?? voucher.cumulativeAmount;
    o.publish(channelSettledEvent(stored, { transaction, delta, settled, reason }, now()));
    o.metrics.sessionSettles.inc({ reason, result: "settled" });
    log.info({ channel: id, transaction, reason, amount: String(delta) }, "session channel settled");
    return { channelId: id, transaction, reason };
  };

  const tick = async (): Promise<SettledChannel[]> => {
    let held = false;
    try {
      held = await o.lease.hold();
    } catch (err) {
      log.warn({ err: err instanceof Error ? err.message : err }, "session settlement lease unavailable");
    }
    o.metrics.sessionLeaseHeld.set(held ? 1 : 0);
    if (!held) return [];
    const settled: SettledChannel[] = [];
    for (const id of await o.state.channelIds()) {
      try {
        const one = await settleOne(id);
        if (one) settled.push(one);
      } catch (err) {
        // Left for the next tick; the channel's charges stay owed and recorded.
        o.metrics.sessionSettles.inc({ reason: "error", result: "failed" });
        log.warn(
          { channel: id, err: err instanceof Error ? err.message : err },
          "session channel settle failed",
        );
      }
    }
    return settled;
  };

  let running: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    running ??= tick()
      .catch((err: unknown) => log.warn({ err }, "session settlement pass failed"))
      .finally(() => {
        running = undefined;
      });
  }, o.schedule.tickMs);
  return {
    tick,
    async stop() {
      clearInterval(timer);
      await running;
      await o.lease.letGo().catch(() => undefined);
    },
  };
}
