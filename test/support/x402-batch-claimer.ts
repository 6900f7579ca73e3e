// The x402-batch claimer's world for tests, with plain objects: channel records, their on-chain
// state, a contract and channel manager that move the totals as the real ones do, a lease that can be
// lost between its check and the act, and an observer that writes down what it saw.
import type { RefundMark, RefundOutcome } from "../../libs/payment-rails/src/batch-refunds.ts";
import type { Lease } from "../../services/settlement-worker/src/adapters/lease.ts";
import type { RefundSent } from "../../services/settlement-worker/src/adapters/x402-batch-refunds.ts";
import type {
  ClaimerObserver,
  ClaimerPorts,
  Intent,
} from "../../services/settlement-worker/src/core/x402-batch-claimer.ts";
import type {
  BatchEvent,
  BatchLog,
  ChannelRecord,
  ClaimPolicy,
  OnChainChannel,
} from "../../services/settlement-worker/src/core/x402-batch-claims.ts";

export const NOW = 1_800_000_000_000;
export const id = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
export const payer = (n: number) => `0x${n.toString(16).padStart(40, "a")}`;
export const record = (n: number, over: Partial<ChannelRecord> = {}): ChannelRecord => ({
  channelId: id(n),
  channelConfig: { payer: payer(n), token: "0xtoken", receiver: "0xreceiver" },
  chargedCumulativeAmount: "0",
  balance: "1000000",
  totalClaimed: "0",
  lastRequestTimestamp: NOW - 1_000,
  ...over,
});
export const chain = (over: Partial<OnChainChannel> = {}): OnChainChannel => ({
  balance: 1_000_000n,
  totalClaimed: 0n,
  withdrawing: false,
  refundNonce: 0n,
  ...over,
});
export const policy: ClaimPolicy = {
  minClaimAmount: 10_000n,
  claimIntervalMs: 60_000,
  idleRefundMs: 3_600_000,
};
/** A lease made for the test: held or not, with a fence that can be lost between the check and the act. */
function fakeLease(): Lease & { held: boolean; fenced: boolean } {
  const lease = {
    held: true,
    fenced: true,
    hold: async () => lease.held,
    epoch: () => (lease.held ? 1 : 0),
    fence: async () => lease.fenced,
    letGo: async () => {},
  };
  return lease;
}

export function recorder(): ClaimerObserver & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    leaseHeld: (held) => seen.push(`lease ${held}`),
    unclaimed: (amount, unconfirmed) => seen.push(`unclaimed ${amount} (${unconfirmed} unconfirmed)`),
    claimed: (vouchers, reason) => seen.push(`claimed ${vouchers} ${reason}`),
    settled: () => seen.push("settled"),
    refunded: (reason) => seen.push(`refunded ${reason}`),
    failed: (operation, err) => seen.push(`failed ${operation}: ${(err as Error).message}`),
  };
}

/**
 * A contract and a channel manager made for the test: claims raise the chain's totals; transaction
 * n is mined in block n. Intents live in a map (Redis in the worker), shared by claimers.
 */
export function world(records: ChannelRecord[], onchain: Map<string, OnChainChannel>) {
  const marks = new Map<string, RefundMark>();
  let unsettled = 0n;
  let txs = 0;
  const sent: string[] = [];
  const logs = new Map<string, BatchLog[]>();
  const lease = fakeLease();
  const published: BatchEvent[] = [];
  const intents = new Map<string, Intent>();
  const outcomes: { outcome: RefundOutcome; after: string }[] = [];
  let refundFails: (() => Promise<RefundSent>) | undefined;
  let ids = 0;
  const ports: ClaimerPorts = {
    channels: {
      list: async () => records,
      raiseClaimed: async (channelId, total) => {
        const r = records.find((c) => c.channelId === channelId);
        if (r) r.totalClaimed = String(total);
      },
    },
    chain: {
      channels: async (ids) =>
        new Map(ids.map((i) => [i.toLowerCase(), onchain.get(i) ?? chain({ balance: 0n })])),
      unsettled: async () => unsettled,
      logs: async (tx) => logs.get(tx) ?? [],
      blockNumber: async () => BigInt(txs),
      logsSince: async (fromBlock, channelIds) => {
        const out = new Map<string, BatchLog[]>();
        for (const [tx, list] of logs) {
          if (BigInt(tx) < fromBlock) continue;
          const ours = list.filter((l) => l.kind === "settled" || channelIds.includes(l.channelId));
          if (ours.length) out.set(tx, ours);
        }
        return out;
      },
    },
    manager: {
      claim: async (ids, confirmed) => {
        const tx = `0x${(++txs).toString(16).padStart(64, "0")}`;
        const out: BatchLog[] = [];
        for (const [i, channelId] of ids.entries()) {
          const r = records.find((c) => c.channelId === channelId) as ChannelRecord;
          const c = onchain.get(channelId) as OnChainChannel;
          const charged = BigInt(r.chargedCumulativeAmount);
          if (charged > (confirmed.get(channelId) ?? 0n)) continue;
          out.push({
            kind: "claimed",
            logIndex: i,
            channelId,
            amount: charged - c.totalClaimed,
            totalClaimed: charged,
          });
          unsettled += charged - c.totalClaimed;
          c.totalClaimed = charged;
          r.totalClaimed = String(charged);
        }
        logs.set(tx, out);
        sent.push(`claim ${out.length}`);
        return [{ vouchers: out.length, transaction: tx }];
      },
      settle: async () => {
        const tx = `0x${(++txs).toString(16).padStart(64, "0")}`;
        logs.set(tx, [{ kind: "settled", logIndex: 0, receiver: "0xreceiver", amount: unsettled }]);
        unsettled = 0n;
        sent.push("settle");
        return { transaction: tx };
      },
      refund: async (channelId) => {
        const tx = `0x${(++txs).toString(16).padStart(64, "0")}`;
        sent.push(`refund ${channelId}`);
        return { transaction: tx };
      },
      // The contract's multicall: the claim of the charged total, then the refund (capped).
      refundRequested: async (r, _state, amount, claim) => {
        if (refundFails) return refundFails();
        const tx = `0x${(++txs).toString(16).padStart(64, "0")}`;
        const c = onchain.get(r.channelId) as OnChainChannel;
        const charged = BigInt(r.chargedCumulativeAmount);
        const out: BatchLog[] = [];
        if (claim && charged > c.totalClaimed) {
          out.push({
            kind: "claimed",
            logIndex: 0,
            channelId: r.channelId,
            amount: charged - c.totalClaimed,
            totalClaimed: charged,
          });
          unsettled += charged - c.totalClaimed;
          c.totalClaimed = charged;
        }
        const available = c.balance - c.totalClaimed;
        let paid = available;
        if (amount < available) paid = amount;
        c.balance -= paid;
        c.refundNonce += 1n;
        out.push({ kind: "refunded", logIndex: out.length, channelId: r.channelId, amount: paid });
        logs.set(tx, out);
        sent.push(`refund ${r.channelId} ${paid}${claim ? " with claim" : ""}`);
        return { success: true, transaction: tx, amount: paid };
      },
    },
    refunds: {
      // The Redis scripts' rule (adapters/x402-batch-refunds.ts): one refund per deposit.
      take: async (channelId, rid, _now, c, amount) => {
        const r = records.find((x) => x.channelId === channelId);
        if (!r || r.pendingRequest?.pendingId !== rid || !r.refundRequest?.submitted) return { kind: "gone" };
        const m = marks.get(channelId);
        if (m && c.refundNonce > BigInt(m.nonce) && c.balance <= BigInt(m.balance))
          return { kind: "refunded", mark: m };
        marks.set(channelId, {
          id: rid,
          nonce: String(c.refundNonce),
          balance: String(c.balance - amount),
          amount: String(amount),
        });
        return { kind: "taken", record: { ...r } };
      },
      complete: async (channelId, outcome, after) => {
        outcomes.push({ outcome, after: after.kind });
        if (after.kind === "unlock" && marks.get(channelId)?.id === outcome.id) marks.delete(channelId);
        const i = records.findIndex((c) => c.channelId === channelId);
        const r = records[i];
        if (!r || r.pendingRequest?.pendingId !== outcome.id || after.kind === "keep") return;
        if (after.kind === "delete") records.splice(i, 1);
        else {
          if (after.kind === "update") r.balance = String(after.balance);
          r.pendingRequest = undefined;
          r.refundRequest = undefined;
        }
      },
    },
    lease,
    intents: {
      open: async (i) => void intents.set(i.id, i),
      close: async (id) => void intents.delete(id),
      list: async () => [...intents.values()],
    },
    publish: (e) => published.push(e),
    now: () => NOW,
    newId: () => `intent-${++ids}`,
  };
  return {
    ports,
    lease,
    sent,
    published,
    intents,
    outcomes,
    failRefunds: (f: () => Promise<RefundSent>) => {
      refundFails = f;
    },
  };
}

export const settings = { policy, network: "eip155:84532", asset: "0xusdc", escrow: "0xescrow" };
