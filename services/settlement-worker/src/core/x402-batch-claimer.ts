// The x402-batch claimer's loop, free of any SDK, chain or Redis: ports in, decisions and events
// out (tests drive it with plain objects). One pass: hold the lease (or do nothing), read the
// channel records and the confirmed on-chain state of the channels that matter, raise records that
// are behind the chain, claim what is due in batches, settle to the receiver whatever the contract
// holds claimed but unsettled, and refund at most one idle channel. The lease's fence is checked
// right before each transaction. Every money-moving log of our transactions becomes one event.
import type { Lease } from "../adapters/lease.ts";
import {
  type BatchEvent,
  type BatchLog,
  batchEvents,
  type ChannelRecord,
  type ClaimPolicy,
  type ClaimReason,
  type OnChainChannel,
  planClaims,
} from "./x402-batch-claims.ts";

export interface ClaimerPorts {
  channels: {
    list(): Promise<ChannelRecord[]>;
    /** Raises a record's claimed total to what the chain says (never lowers it). */
    raiseClaimed(channelId: string, totalClaimed: bigint): Promise<void>;
  };
  chain: {
    /** Confirmed state of these channels, keyed by lowercase id. */
    channels(ids: readonly string[]): Promise<Map<string, OnChainChannel>>;
    /** Claimed for the receiver but not yet settled to it. */
    unsettled(): Promise<bigint>;
    /** The batch settlement contract's logs in our transaction's receipt. */
    logs(transaction: string): Promise<BatchLog[]>;
  };
  /** The official channel manager's operations (claimWithSignature batches, settle, refund). */
  manager: {
    /**
     * Claims these channels, each up to its confirmed balance (`confirmed`, by lowercase id): a
     * voucher accepted since the plan on an unconfirmed top-up waits for the next pass.
     */
    claim(
      channelIds: readonly string[],
      confirmed: ReadonlyMap<string, bigint>,
    ): Promise<{ vouchers: number; transaction: string }[]>;
    settle(): Promise<{ transaction: string }>;
    refund(channelId: string): Promise<{ transaction: string } | undefined>;
  };
  lease: Lease;
  publish(event: BatchEvent): void;
  now?: () => number;
}

export interface ClaimerSettings {
  policy: ClaimPolicy;
  network: string;
  asset: string;
  escrow: string;
}

export interface ClaimerObserver {
  leaseHeld(held: boolean): void;
  unclaimed(amount: bigint, unconfirmedChannels: number): void;
  claimed(vouchers: number, reason: ClaimReason): void;
  settled(): void;
  refunded(): void;
  failed(operation: "claim" | "settle" | "refund" | "pass", err: unknown): void;
}

export interface PassResult {
  held: boolean;
  claims: { vouchers: number; transaction: string }[];
  reason: ClaimReason | undefined;
  settle: string | undefined;
  refund: { channel: string; transaction: string } | undefined;
  events: BatchEvent[];
}

/** The lease changed hands between the pass's start and a transaction: the pass stops there. */
export class LeaseLostError extends Error {
  override name = "LeaseLostError";
}

export interface Claimer {
  /** One pass (the schedule and accrual nudges run it; tests call it). */
  pass(): Promise<PassResult>;
  /** An accrual of `amount` was accepted: a pass runs soon once enough has accrued. */
  accrued(amount: bigint): void;
  /** Runs a pass soon (coalesced with one already running). */
  nudge(): void;
  /** Starts the schedule (every `tickMs`). */
  start(tickMs: number): void;
  stop(): Promise<void>;
}

export function createClaimer(
  ports: ClaimerPorts,
  settings: ClaimerSettings,
  observe: ClaimerObserver,
): Claimer {
  const now = ports.now ?? Date.now;
  let lastClaimAt = now();
  let heldEpoch = 0;
  let accruedSince = 0n;

  const fenced = async <T>(act: () => Promise<T>): Promise<T> => {
    if (!(await ports.lease.fence())) throw new LeaseLostError("the claim lease was taken over");
    return act();
  };

  const record = async (
    transaction: string,
    payers: Map<string, string>,
    reason: string,
    out: BatchEvent[],
  ) => {
    const logs = await ports.chain.logs(transaction);
    const events = batchEvents(logs, {
      network: settings.network,
      asset: settings.asset,
      escrow: settings.escrow,
      transaction,
      payers,
      reason,
      time: now(),
    });
    for (const e of events) ports.publish(e);
    out.push(...events);
  };

  const pass = async (): Promise<PassResult> => {
    const result: PassResult = {
      held: false,
      claims: [],
      reason: undefined,
      settle: undefined,
      refund: undefined,
      events: [],
    };
    result.held = await ports.lease.hold();
    observe.leaseHeld(result.held);
    if (!result.held) return result;
    // A replica that just took over starts its interval now (at most one interval late).
    if (ports.lease.epoch() !== heldEpoch) {
      heldEpoch = ports.lease.epoch();
      lastClaimAt = now();
    }
    const t = now();
    const records = await ports.channels.list();
    const payers = new Map(records.map((c) => [c.channelId.toLowerCase(), c.channelConfig.payer]));
    const relevant = records.filter(
      (c) =>
        BigInt(c.chargedCumulativeAmount) > BigInt(c.totalClaimed) ||
        (settings.policy.idleRefundMs > 0 && t - c.lastRequestTimestamp >= settings.policy.idleRefundMs),
    );
    const onchain = relevant.length
      ? await ports.chain.channels(relevant.map((c) => c.channelId))
      : new Map<string, OnChainChannel>();
    const plan = planClaims(relevant, onchain, settings.policy, t, lastClaimAt);
    for (const b of plan.behind) await ports.channels.raiseClaimed(b.channelId, b.totalClaimed);
    observe.unclaimed(plan.unclaimed, plan.unconfirmed.length);

    if (plan.reason) {
      try {
        const confirmed = new Map([...onchain].map(([id, c]) => [id, c.balance]));
        result.claims = await fenced(() => ports.manager.claim(plan.claim, confirmed));
        result.reason = plan.reason;
        lastClaimAt = now();
        accruedSince = 0n;
        for (const c of result.claims) {
          observe.claimed(c.vouchers, plan.reason);
          await record(c.transaction, payers, `claim: ${plan.reason}`, result.events);
        }
      } catch (err) {
        observe.failed("claim", err);
        if (err instanceof LeaseLostError) return result;
      }
    }
    try {
      if ((await ports.chain.unsettled()) > 0n) {
        const { transaction } = await fenced(() => ports.manager.settle());
        result.settle = transaction;
        observe.settled();
        await record(transaction, payers, "settle to the receiver", result.events);
      }
    } catch (err) {
      observe.failed("settle", err);
      if (err instanceof LeaseLostError) return result;
    }
    if (plan.refund) {
      const channel = plan.refund;
      try {
        const refunded = await fenced(() => ports.manager.refund(channel));
        if (refunded) {
          result.refund = { channel, transaction: refunded.transaction };
          observe.refunded();
          await record(refunded.transaction, payers, "refund: idle channel", result.events);
        }
      } catch (err) {
        observe.failed("refund", err);
      }
    }
    return result;
  };

  let running: Promise<unknown> | undefined;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const nudge = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = pass()
      .catch((err: unknown) => observe.failed("pass", err))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          nudge();
        }
      });
  };
  return {
    pass,
    nudge,
    accrued(amount) {
      accruedSince += amount;
      if (accruedSince >= settings.policy.minClaimAmount) {
        accruedSince = 0n;
        nudge();
      }
    },
    start(tickMs) {
      timer = setInterval(nudge, tickMs);
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
      observe.leaseHeld(false);
      await ports.lease.letGo().catch(() => undefined);
    },
  };
}
