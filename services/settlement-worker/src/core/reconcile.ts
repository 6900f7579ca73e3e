// Reconciliation: the settlement chain's token transfers to the receiver in a block range against
// the ledger's entries that say money arrived (INFLOWS). Pure: the chain and the ledger are read by
// the adapters; this only compares.

/** A token transfer to the receiver, from the chain's logs. */
export interface Transfer {
  transaction: string;
  block: bigint;
  from: string;
  amount: bigint;
}

/** A ledger entry that says money arrived, with the transaction it names. */
export interface Inflow {
  id: string;
  transaction: string;
  payer: string;
  amount: bigint;
}

export interface Difference {
  kind: "missing_in_ledger" | "not_on_chain" | "amount_mismatch" | "duplicate_in_ledger";
  transaction: string;
  /** 0n when the transaction is not on chain. */
  block: bigint;
  chainAmount: bigint;
  ledgerAmount: bigint;
  ledgerIds: string[];
  payer: string;
}

const norm = (tx: string) => tx.toLowerCase();

/**
 * Compares, per transaction, what reached the receiver with what the ledger recorded. `transfers`
 * are every transfer in the range; `inflows` the ledger entries naming any transaction of the range
 * or recorded while it was mined; `located` says in which block an entry's transaction is (undefined:
 * not on chain), for entries whose transaction moved nothing to the receiver in the range.
 */
export function compare(
  transfers: readonly Transfer[],
  inflows: readonly Inflow[],
  located: ReadonlyMap<string, bigint | undefined>,
  range: { from: bigint; to: bigint },
): Difference[] {
  const chain = new Map<string, { block: bigint; amount: bigint; from: string }>();
  for (const t of transfers) {
    const k = norm(t.transaction);
    const seen = chain.get(k);
    chain.set(k, { block: t.block, amount: (seen?.amount ?? 0n) + t.amount, from: seen?.from ?? t.from });
  }
  const ledger = new Map<string, Inflow[]>();
  for (const e of inflows) ledger.set(norm(e.transaction), [...(ledger.get(norm(e.transaction)) ?? []), e]);

  const out: Difference[] = [];
  for (const [tx, t] of chain) {
    const entries = ledger.get(tx) ?? [];
    const recorded = entries.reduce((sum, e) => sum + e.amount, 0n);
    const base = {
      transaction: tx,
      block: t.block,
      chainAmount: t.amount,
      ledgerAmount: recorded,
      ledgerIds: entries.map((e) => e.id),
      payer: entries[0]?.payer ?? t.from,
    };
    if (entries.length === 0) out.push({ kind: "missing_in_ledger", ...base });
    else if (entries.length > 1) out.push({ kind: "duplicate_in_ledger", ...base });
    else if (recorded !== t.amount) out.push({ kind: "amount_mismatch", ...base });
  }
  for (const [tx, entries] of ledger) {
    if (chain.has(tx)) continue;
    const block = located.get(tx);
    // Mined outside the range: another range's business.
    if (block !== undefined && (block < range.from || block > range.to)) continue;
    out.push({
      kind: "not_on_chain",
      transaction: tx,
      block: block ?? 0n,
      chainAmount: 0n,
      ledgerAmount: entries.reduce((sum, e) => sum + e.amount, 0n),
      ledgerIds: entries.map((e) => e.id),
      payer: entries[0]?.payer ?? "",
    });
  }
  return out.sort((a, b) =>
    a.block === b.block ? a.transaction.localeCompare(b.transaction) : a.block < b.block ? -1 : 1,
  );
}
