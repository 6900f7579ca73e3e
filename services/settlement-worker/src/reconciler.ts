// One reconciliation: read the receiver's token transfers in the block range, the ledger entries
// that say money arrived for those transactions or while the range was mined, locate the entries'
// transactions the range did not show, and compare (core/reconcile.ts).
import type { SettlementChain } from "./adapters/chain.ts";
import type { LedgerStore } from "./adapters/ledger-store.ts";
import type { ChainConfig } from "./config.ts";
import { compare, type Difference } from "./core/reconcile.ts";

/** An outcome is recorded after its transaction's receipt: entries up to this long after the range count. */
const RECORD_LAG_MS = 10 * 60_000;

export interface Reconciliation {
  transfers: number;
  transferTotal: bigint;
  ledgerEntries: number;
  ledgerTotal: bigint;
  differences: Difference[];
}

export async function reconcile(
  chain: SettlementChain,
  ledger: LedgerStore,
  config: ChainConfig,
  from: bigint,
  to: bigint,
): Promise<Reconciliation> {
  const transfers = await chain.transfersTo(config.asset, config.payTo, from, to);
  const [start, end] = await Promise.all([chain.blockTime(from), chain.blockTime(to)]);
  const onChain = new Set(transfers.map((t) => t.transaction.toLowerCase()));
  const inflows = await ledger.inflows(config.network, config.asset, [...onChain], {
    from: start,
    to: new Date(end.getTime() + RECORD_LAG_MS),
  });
  const elsewhere = [...new Set(inflows.map((e) => e.transaction.toLowerCase()))].filter(
    (tx) => !onChain.has(tx),
  );
  const located = new Map(
    await Promise.all(elsewhere.map(async (tx) => [tx, await chain.blockOf(tx)] as const)),
  );
  const inRange = inflows.filter((e) => {
    const tx = e.transaction.toLowerCase();
    if (onChain.has(tx)) return true;
    const block = located.get(tx);
    return block === undefined || (block >= from && block <= to);
  });
  return {
    transfers: transfers.length,
    transferTotal: transfers.reduce((sum, t) => sum + t.amount, 0n),
    ledgerEntries: inRange.length,
    ledgerTotal: inRange.reduce((sum, e) => sum + e.amount, 0n),
    differences: compare(transfers, inRange, located, { from, to }),
  };
}
