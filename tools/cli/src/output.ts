// The JSON the CLI prints: snake_case fields, absent values as null, never a key's secret but where
// the command exists to show it once.
import { usdcOfAtomic } from "@tollgate/catalog";
import type { Account__Output } from "@tollgate/platform/generated/tollgate/quota/v1/Account";
import type { AccountCredits__Output } from "@tollgate/platform/generated/tollgate/quota/v1/AccountCredits";
import type { ApiKey__Output } from "@tollgate/platform/generated/tollgate/quota/v1/ApiKey";
import type { CreditMovement__Output } from "@tollgate/platform/generated/tollgate/quota/v1/CreditMovement";
import type { ReconcileResponse__Output } from "@tollgate/platform/generated/tollgate/settlement/v1/ReconcileResponse";
import type { Settlement__Output } from "@tollgate/platform/generated/tollgate/settlement/v1/Settlement";
import { Failure } from "./errors.ts";

export function accountJson(a: Account__Output | null | undefined) {
  if (!a) throw new Failure("quota-meter returned no account");
  return {
    id: a.id,
    name: a.name,
    status: a.status,
    daily_limit: a.dailyLimit,
    monthly_limit: a.monthlyLimit,
    burst_per_second: a.burstPerSecond,
    plan: a.plan,
    credits_only: a.creditsOnly,
    created_at: a.createdAt,
  };
}

/** Atomic units as the CLI prints them: the number, and the same in USDC. */
const money = (atomic: number) => ({ atomic, usdc: usdcOfAtomic(atomic) });

export function creditsJson(c: AccountCredits__Output | null | undefined) {
  if (!c) throw new Failure("quota-meter returned no credits");
  const balance = money(c.balance);
  const ledger = money(c.ledgerBalance);
  return {
    balance: balance.atomic,
    balance_usdc: balance.usdc,
    ledger_balance: ledger.atomic,
    open_leases: c.openLeases.map((l) => ({
      id: l.id,
      amount: Number(l.amount),
      used: Number(l.used),
      held: Number(l.amount) - Number(l.used),
    })),
  };
}

export function movementJson(m: CreditMovement__Output | null | undefined) {
  if (!m) throw new Failure("quota-meter returned no credit movement");
  const orNull = (v: string) => v || null;
  const amount = money(m.amount);
  return {
    kind: m.kind,
    amount: amount.atomic,
    amount_usdc: amount.usdc,
    at: m.at,
    day: m.day,
    id: orNull(m.id),
    ...(m.kind === "adjustment" ? { operator: m.operator, reason: m.reason } : {}),
    ...(m.kind === "top_up"
      ? { scheme: m.scheme, payment_network: m.paymentNetwork, transaction: orNull(m.transaction) }
      : {}),
    ...(m.kind === "draws" ? { batches: m.count } : {}),
  };
}

export function keyJson(k: ApiKey__Output | null | undefined) {
  if (!k) throw new Failure("quota-meter returned no key");
  return {
    id: k.id,
    account_id: k.accountId,
    prefix: k.prefix,
    created_at: k.createdAt,
    revoked_at: k.revokedAt || null,
    last_used_at: k.lastUsedAt || null,
  };
}

export function settlementJson(e: Settlement__Output) {
  const orNull = (v: string) => v || null;
  return {
    id: e.id,
    outcome: e.outcome,
    time: e.time,
    payer: e.payer,
    amount: e.amount,
    asset: e.asset,
    payment_network: e.paymentNetwork,
    scheme: e.scheme,
    transaction: orNull(e.transaction),
    channel: orNull(e.channel),
    cumulative: orNull(e.cumulative),
    request_id: orNull(e.requestId),
    endpoint: orNull(e.endpoint),
    network: orNull(e.network),
    reason: orNull(e.reason),
  };
}

export function reconcileJson(r: ReconcileResponse__Output) {
  return {
    reconciled: r.differences.length === 0,
    payment_network: r.paymentNetwork,
    asset: r.asset,
    pay_to: r.payTo,
    from_block: r.fromBlock,
    to_block: r.toBlock,
    transfers: r.transfers,
    transfer_total: r.transferTotal,
    ledger_entries: r.ledgerEntries,
    ledger_total: r.ledgerTotal,
    differences: r.differences.map((d) => ({
      kind: d.kind,
      transaction: d.transaction,
      block: d.block || null,
      chain_amount: d.chainAmount,
      ledger_amount: d.ledgerAmount,
      ledger_ids: d.ledgerIds,
      payer: d.payer || null,
    })),
  };
}
