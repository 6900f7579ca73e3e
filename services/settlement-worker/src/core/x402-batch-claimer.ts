// The x402-batch claimer's loop, free of any SDK, chain or Redis: ports in, decisions and events
// out (tests drive it with plain objects). One pass: hold the lease (or do nothing), read the
// channel records and the confirmed on-chain state of the channels that matter, raise records that
// are behind the chain, claim what is due in batches, send the refunds payers asked for (each one
// transaction: the claim of what its channel charged, the refund of the rest), settle to the
// receiver whatever the contract holds claimed but unsettled, and refund at most one idle channel.
// The lease's fence is checked right before each transaction. Every money-moving log of our
// transactions becomes one event.
//
// An event must outlive a crash between a mined transaction and its journaling: before each
// operation the claimer records an intent (the block it starts from, the channels and their payers)
// in Redis, and removes it once the events are journaled. Every pass first reconciles the intents
// left open (by a crash, a lost receipt, a failed send) against the escrow's logs since their block
// and journals what they find; event ids are the chain's own, so a re-journaled event is the same.
import { randomUUID } from "node:crypto";
import type { Lease } from "../adapters/lease.ts";
import type { RefundRequests, RefundSender } from "../adapters/x402-batch-refunds.ts";
import {
  type BatchEvent,
  type BatchLog,
  batchEvents,
  type ChannelRecord,
  type ClaimPolicy,
  type ClaimReason,
  type OnChainChannel,
  planClaims,
  refundRequested,
} from "./x402-batch-claims.ts";
import { requestedRefunds } from "./x402-batch-requested-refunds.ts";

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
    blockNumber(): Promise<bigint>;
    /**
     * The escrow's money-moving logs since `fromBlock`: claims and refunds of these channels,
     * settles to our receiver; by transaction.
     */
    logsSince(fromBlock: bigint, channelIds: readonly string[]): Promise<Map<string, BatchLog[]>>;
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
    refundRequested: RefundSender;
  };
  /** The payers' refund requests payment-verifier took (libs/payment-rails batch-refunds.ts). */
  refunds: RefundRequests;
  lease: Lease;
  /** Operations about to send transactions, kept (Redis) until their events are journaled. */
  intents: {
    open(intent: Intent): Promise<void>;
    close(id: string): Promise<void>;
    list(): Promise<Intent[]>;
  };
  publish(event: BatchEvent): void;
  now?: () => number;
  newId?: () => string;
}

/** An operation (claim, settle or refund) recorded before it sends anything. */
export interface Intent {
  id: string;
  operation: "claim" | "settle" | "refund";
  /** The latest block before the send: its transactions are mined in this block or later. */
  fromBlock: string;
  /** The channels it touches (lowercase), and each one's payer (for the events). */
  payers: Record<string, string>;
  reason: string;
  at: number;
}

export interface ClaimerSettings {
  policy: ClaimPolicy;
  network: string;
  asset: string;
  escrow: string;
  /**
   * How long an open intent is reconciled (default 10 minutes): a transaction of a process that
   * died is mined (or dropped) well within it.
   */
  intentHorizonMs?: number;
}

const INTENT_HORIZON_MS = 10 * 60_000;

export interface ClaimerObserver {
  leaseHeld(held: boolean): void;
  unclaimed(amount: bigint, unconfirmedChannels: number): void;
  claimed(vouchers: number, reason: ClaimReason): void;
  settled(): void;
  /** A refund transaction of ours was mined (its gas is counted from its receipt). */
  refunded(kind: "idle" | "requested", transaction: string): void;
  failed(operation: "claim" | "settle" | "refund" | "pass", err: unknown): void;
  /** Events journaled from an open intent's logs (a crash or failure had left them out). */
  recovered?(events: number): void;
}

interface PassResult {
  held: boolean;
  claims: { vouchers: number; transaction: string }[];
  reason: ClaimReason | undefined;
  settle: string | undefined;
  refund: { channel: string; transaction: string } | undefined;
  /** The payers' refunds sent on this pass. */
  requested: { channel: string; transaction: string }[];
  events: BatchEvent[];
}

/** The lease changed hands between the pass's start and a transaction: the pass stops there. */
class LeaseLostError extends Error {
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
  const newId = ports.newId ?? (() => randomUUID());
  const horizon = settings.intentHorizonMs ?? INTENT_HORIZON_MS;
  /** Event ids this process journaled while intents are open (so none is journaled twice here). */
  const journaled = new Set<string>();
  let lastClaimAt = now();
  let heldEpoch = 0;
  let accruedSince = 0n;

  const fenced = async <T>(act: () => Promise<T>): Promise<T> => {
    if (!(await ports.lease.fence())) throw new LeaseLostError("the claim lease was taken over");
    return act();
  };

  const eventsOf = (
    transaction: string,
    logs: BatchLog[],
    payers: ReadonlyMap<string, string>,
    reason: string,
    requestId?: string,
  ) =>
    batchEvents(logs, {
      network: settings.network,
      asset: settings.asset,
      escrow: settings.escrow,
      transaction,
      payers,
      reason,
      time: now(),
      ...(requestId ? { requestId } : {}),
    });

  const record = async (
    transaction: string,
    payers: Map<string, string>,
    reason: string,
    out: BatchEvent[],
    requestId?: string,
  ) => {
    const events = eventsOf(transaction, await ports.chain.logs(transaction), payers, reason, requestId);
    for (const e of events) {
      journaled.add(e.id);
      ports.publish(e);
    }
    out.push(...events);
  };

  /** Records the intent, runs the operation, and closes the intent once its events are journaled. */
  const intended = async <T>(
    operation: Intent["operation"],
    channels: readonly string[],
    payers: ReadonlyMap<string, string>,
    reason: string,
    act: () => Promise<T>,
  ): Promise<T> => {
    const ids = channels.map((c) => c.toLowerCase());
    const intent: Intent = {
      id: newId(),
      operation,
      fromBlock: String(await ports.chain.blockNumber()),
      payers: Object.fromEntries(ids.map((c) => [c, payers.get(c) ?? "unknown"])),
      reason,
      at: now(),
    };
    await ports.intents.open(intent);
    const done = await act();
    await ports.intents.close(intent.id);
    return done;
  };

  /** Journals what open intents left out; forgets an intent once past its horizon. */
  const reconcile = async (out: BatchEvent[]) => {
    const open = await ports.intents.list();
    if (open.length === 0) journaled.clear();
    for (const intent of open) {
      const payers = new Map(Object.entries(intent.payers));
      const found = await ports.chain.logsSince(BigInt(intent.fromBlock), [...payers.keys()]);
      let recovered = 0;
      for (const [transaction, logs] of found) {
        for (const e of eventsOf(transaction, logs, payers, `${intent.reason} (reconciled)`)) {
          if (journaled.has(e.id)) continue;
          journaled.add(e.id);
          ports.publish(e);
          out.push(e);
          recovered++;
        }
      }
      if (recovered > 0) observe.recovered?.(recovered);
      if (now() - intent.at >= horizon) {
        await ports.intents.close(intent.id);
      }
    }
  };

  const sendRequested = requestedRefunds({
    ports,
    observe,
    now,
    send: (channel, payers, reason, act) => fenced(() => intended("refund", [channel], payers, reason, act)),
    record,
  });

  const pass = async (): Promise<PassResult> => {
    const result: PassResult = {
      held: false,
      claims: [],
      reason: undefined,
      settle: undefined,
      refund: undefined,
      requested: [],
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
    await reconcile(result.events);
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
        const reason = `claim: ${plan.reason}`;
        result.claims = await fenced(() =>
          intended("claim", plan.claim, payers, reason, async () => {
            const claims = await ports.manager.claim(plan.claim, confirmed);
            for (const c of claims) await record(c.transaction, payers, reason, result.events);
            return claims;
          }),
        );
        result.reason = plan.reason;
        lastClaimAt = now();
        accruedSince = 0n;
        for (const c of result.claims) observe.claimed(c.vouchers, plan.reason);
      } catch (err) {
        observe.failed("claim", err);
        if (err instanceof LeaseLostError) return result;
      }
    }
    // The refunds payers asked for (before the settle, which then sweeps what they claimed).
    for (const c of records) {
      const request = refundRequested(c, t);
      if (!request) continue;
      try {
        const sent = await sendRequested(c, request, payers, result.events);
        if (sent) result.requested.push(sent);
      } catch (err) {
        observe.failed("refund", err);
        if (err instanceof LeaseLostError) return result;
      }
    }
    try {
      if ((await ports.chain.unsettled()) > 0n) {
        const reason = "settle to the receiver";
        const { transaction } = await fenced(() =>
          intended("settle", [], payers, reason, async () => {
            const settled = await ports.manager.settle();
            await record(settled.transaction, payers, reason, result.events);
            return settled;
          }),
        );
        result.settle = transaction;
        observe.settled();
      }
    } catch (err) {
      observe.failed("settle", err);
      if (err instanceof LeaseLostError) return result;
    }
    if (plan.refund) {
      const channel = plan.refund;
      try {
        const reason = "refund: idle channel";
        const refunded = await fenced(() =>
          intended("refund", [channel], payers, reason, async () => {
            const done = await ports.manager.refund(channel);
            if (done) await record(done.transaction, payers, reason, result.events);
            return done;
          }),
        );
        if (refunded) {
          result.refund = { channel, transaction: refunded.transaction };
          observe.refunded("idle", refunded.transaction);
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
