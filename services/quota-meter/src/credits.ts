// Prepaid credits: the ledger in PostgreSQL is their record (append-only: top-ups, draws, refunds,
// each with its cause), the balance in the hot copy is what Authorize draws from. A ledger row is
// written first, then applied to the copy once (store.applyCredits: only to the copy generation
// the row was written in, once per cause), then marked applied; the sweep applies what a crash or
// a Redis blip left owed. Draws reach the ledger from the usage stream (rollups.ts, one row per
// batch and account); top-ups from CreditService.CreditTopUp, once per settlement; operators'
// adjustments from QuotaAdminService.AdjustCredits, once per adjustment id, the same way.
import type { Logger } from "@tollgate/platform";
import { grpc } from "@tollgate/platform";
import type { CreditTopUpRequest__Output } from "@tollgate/platform/generated/tollgate/quota/v1/CreditTopUpRequest";
import type { CreditTopUpResponse } from "@tollgate/platform/generated/tollgate/quota/v1/CreditTopUpResponse";
import type { GetOwnCreditsResponse } from "@tollgate/platform/generated/tollgate/quota/v1/GetOwnCreditsResponse";
import type { Records } from "./db/records.ts";
import { fail } from "./key-ops.ts";
import { isWellFormedKey, type KeyHasher, newAccountId } from "./keys.ts";
import type { QuotaMetrics } from "./metrics.ts";
import type { PlanBook } from "./plans.ts";
import { CopyNotReady, type CreditEntry, type QuotaStore } from "./store/types.ts";
import { recentDays } from "./windows.ts";

/** How long an applied entry stays marked in the copy (its ledger row is marked right after). */
const APPLY_MEMORY_MS = 24 * 3_600_000;
/** How often the owed entries are looked for. */
export const CREDIT_SWEEP_MS = 30_000;
/** Owed entries applied per sweep, at most. */
const SWEEP_PAGE = 500;
const WALLET = /^0x[0-9a-fA-F]{40}$/;
/** A settlement id as the mesh makes them (payment-verifier's): printable, bounded. */
const CAUSE = /^[\x21-\x7e]{8,200}$/;
/** An adjustment id as the operator's client makes it (tools/cli: adj_ and 16 random bytes). */
const ADJUSTMENT_ID = /^adj_[0-9a-f]{32}$/;
const TEXT = /^\P{Cc}{1,500}$/u;
const NAME = /^\P{Cc}{1,100}$/u;
/** 1,000,000 USDC: an adjustment beyond it is a typo (atomic units for USDC), not a correction. */
const MAX_ADJUSTMENT = 1_000_000_000_000;
const DEFAULT_DAYS = 30;
const MAX_DAYS = 366;

export interface CreditsDeps {
  records: Records;
  store: QuotaStore;
  hasher: KeyHasher;
  plans: PlanBook;
  metrics: QuotaMetrics;
  logger: Logger;
  now: () => number;
}

export function createCredits(deps: CreditsDeps) {
  const { records, store, logger } = deps;

  /**
   * Applies ledger entries to the copy and marks them applied. The balances after them, or
   * undefined when the copy could not take them now (they stay owed: the sweep, or the seed of a
   * new copy, applies them).
   */
  async function apply(entries: CreditEntry[]): Promise<number[] | undefined> {
    try {
      const balances = await store.applyCredits(entries, APPLY_MEMORY_MS);
      await records.markApplied(entries);
      return balances;
    } catch (err) {
      if (!(err instanceof CopyNotReady)) {
        logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          "credits not applied to the copy yet",
        );
      }
      return undefined;
    }
  }

  /**
   * The account a top-up is for: the key's, or the wallet's. A wallet's new account is credits only
   * and waits for a sign-up: buying credits gives no plan volume (the free plan comes from a
   * dashboard sign-up, which applies the sign-up policy: account.ts ResolveWalletAccount).
   */
  async function creditedAccount(req: Pick<CreditTopUpRequest__Output, "apiKey" | "wallet">) {
    if (req.apiKey) {
      if (!isWellFormedKey(req.apiKey))
        fail(grpc.status.UNAUTHENTICATED, "invalid_api_key", "the API key is unknown or revoked");
      const account = await records.accountOfKey(deps.hasher(req.apiKey));
      if (!account) fail(grpc.status.UNAUTHENTICATED, "invalid_api_key", "the API key is unknown or revoked");
      return { account, created: false };
    }
    if (!WALLET.test(req.wallet)) {
      fail(
        grpc.status.INVALID_ARGUMENT,
        "invalid_argument",
        "wallet: expected 0x and 40 hex digits (or an api_key)",
      );
    }
    const address = req.wallet.toLowerCase();
    const fresh = {
      id: newAccountId(),
      name: `wallet ${address}`,
      status: "active" as const,
      ...deps.plans.free,
      plan: "free" as const,
      createdAt: new Date(deps.now()).toISOString(),
      creditsOnly: true,
      signUpPending: true,
    };
    const found = await records.walletAccount(address, fresh, async (a) => {
      await store.createAccount(a);
      await store.bindWallet(address, a.id);
    });
    if (!found) fail(grpc.status.INTERNAL, "internal", "the wallet's account could not be made");
    return found;
  }

  /** Records a settled top-up for the account once per cause, then applies it to the copy. */
  async function credit(
    accountId: string,
    created: boolean,
    req: Pick<CreditTopUpRequest__Output, "amount" | "cause" | "scheme" | "paymentNetwork" | "transaction">,
  ): Promise<CreditTopUpResponse> {
    const recorded = await records.topUp({
      accountId,
      amount: req.amount,
      cause: req.cause,
      scheme: req.scheme.slice(0, 40),
      paymentNetwork: req.paymentNetwork.slice(0, 60),
      transaction: req.transaction.slice(0, 100),
    });
    if (!recorded) {
      fail(grpc.status.FAILED_PRECONDITION, "cause_used", "this settlement already credited another account");
    }
    if (recorded.fresh) {
      deps.metrics.creditsToppedUp.inc(req.amount);
      logger.info({ accountId, amount: req.amount, scheme: req.scheme }, "credits topped up");
    }
    const applied = recorded.owed ? await apply([recorded.entry]) : undefined;
    const balance = applied?.[0] ?? (await records.creditBalance(accountId));
    return { accountId, balance, credited: recorded.fresh, accountCreated: created };
  }

  /** The balance an account is shown (the copy's with its leases, else the ledger's), its leases. */
  async function accountCredits(accountId: string) {
    const ledgerBalance = await records.creditBalance(accountId);
    const hot = store.isReady()
      ? await Promise.all([store.readShownCredits(accountId), store.openCreditLeases(accountId)]).catch(
          () => undefined,
        )
      : undefined;
    return {
      balance: hot?.[0] ?? ledgerBalance,
      ledgerBalance,
      openLeases: hot?.[1] ?? [],
    };
  }

  return {
    accountCredits,

    async topUp(req: CreditTopUpRequest__Output): Promise<CreditTopUpResponse> {
      if (!(req.amount > 0 && Number.isSafeInteger(req.amount))) {
        fail(
          grpc.status.INVALID_ARGUMENT,
          "invalid_argument",
          "amount: expected a positive number of atomic units",
        );
      }
      if (!CAUSE.test(req.cause))
        fail(grpc.status.INVALID_ARGUMENT, "invalid_argument", "cause: expected the settlement's id");
      const { account, created } = await creditedAccount(req);
      return credit(account.id, created, req);
    },

    /**
     * A settled top-up read from the settlement stream (top-up-repair.ts): credited to `accountId`
     * (the account its buyer named with an API key) or else to the wallet's account (made when new),
     * once per cause, as CreditTopUp credits it. `credited` is false when the gateway's own
     * CreditTopUp (or an earlier delivery) credited it already.
     */
    async topUpSettled(t: {
      accountId?: string | undefined;
      wallet: string;
      amount: number;
      cause: string;
      scheme: string;
      paymentNetwork: string;
      transaction: string;
    }): Promise<CreditTopUpResponse> {
      if (!(t.amount > 0 && Number.isSafeInteger(t.amount)) || !CAUSE.test(t.cause))
        fail(grpc.status.INVALID_ARGUMENT, "invalid_argument", "not a settled top-up: amount or cause");
      if (t.accountId) {
        const account = await records.getAccount(t.accountId);
        if (!account)
          fail(grpc.status.FAILED_PRECONDITION, "not_found", "the top-up's account does not exist");
        return credit(account.id, false, t);
      }
      const { account, created } = await creditedAccount({ apiKey: "", wallet: t.wallet });
      return credit(account.id, created, t);
    },

    /** The balance (the copy's, else the ledger's) and the ledger by day, oldest first. */
    async ownCredits(accountId: string, creditsOnly: boolean, days: number): Promise<GetOwnCreditsResponse> {
      const count = days > 0 ? Math.min(days, MAX_DAYS) : DEFAULT_DAYS;
      const wanted = recentDays(deps.now(), count);
      const [hot, rows] = await Promise.all([
        store.isReady()
          ? store.readShownCredits(accountId).catch(() => undefined)
          : Promise.resolve(undefined),
        records.creditDays(accountId, wanted[0] ?? ""),
      ]);
      const balance = hot ?? (await records.creditBalance(accountId));
      const byDay = new Map(rows.map((r) => [r.day, r]));
      return {
        balance: Math.max(0, balance),
        creditsOnly,
        days: wanted.map((day) => ({
          day,
          topUps: byDay.get(day)?.topUps ?? 0,
          draws: byDay.get(day)?.draws ?? 0,
          refunds: byDay.get(day)?.refunds ?? 0,
        })),
      };
    },

    /**
     * An operator's adjustment: recorded in the ledger once per id (a deduct only while the shown
     * balance covers it), then applied to the copy as a top-up is (once, to the generation the row
     * was written in; the sweep applies it if the copy could not take it now).
     */
    async adjust(req: {
      accountId: string;
      amount: number;
      reason: string;
      operator: string;
      adjustmentId: string;
    }) {
      if (!Number.isSafeInteger(req.amount) || req.amount === 0 || Math.abs(req.amount) > MAX_ADJUSTMENT) {
        fail(
          grpc.status.INVALID_ARGUMENT,
          "invalid_argument",
          `amount: expected a non-zero number of atomic units, at most ${MAX_ADJUSTMENT} either way`,
        );
      }
      if (!ADJUSTMENT_ID.test(req.adjustmentId))
        fail(
          grpc.status.INVALID_ARGUMENT,
          "invalid_argument",
          "adjustment_id: expected adj_ and 32 hex digits",
        );
      const reason = req.reason.trim();
      if (!TEXT.test(reason))
        fail(
          grpc.status.INVALID_ARGUMENT,
          "invalid_argument",
          "reason: expected 1 to 500 printable characters",
        );
      const operator = req.operator.trim();
      if (!NAME.test(operator))
        fail(
          grpc.status.INVALID_ARGUMENT,
          "invalid_argument",
          "operator: expected 1 to 100 printable characters",
        );
      const outcome = await records.adjust(
        { accountId: req.accountId, amount: req.amount, cause: req.adjustmentId, operator, reason },
        async () => (await accountCredits(req.accountId)).balance,
      );
      if ("refused" in outcome) {
        if (outcome.refused === "id_used")
          fail(
            grpc.status.FAILED_PRECONDITION,
            "adjustment_id_used",
            `adjustment ${req.adjustmentId} was made for another account or amount`,
          );
        fail(
          grpc.status.FAILED_PRECONDITION,
          "insufficient_credits",
          `the balance is ${outcome.balance} atomic units: taking back ${-req.amount} would leave it below zero`,
        );
      }
      const { row, fresh, owed } = outcome;
      if (fresh) {
        logger.info(
          { accountId: req.accountId, amount: req.amount, operator, reason, adjustmentId: req.adjustmentId },
          "credits adjusted",
        );
      }
      if (owed) await apply([row.entry]);
      return {
        adjustment: {
          kind: "adjustment",
          amount: req.amount,
          at: row.at.toISOString(),
          day: row.at.toISOString().slice(0, 10),
          id: req.adjustmentId,
          operator: row.operator,
          reason: row.reason,
        },
        balance: (await accountCredits(req.accountId)).balance,
        applied: fresh,
      };
    },

    /** The ledger's movements of an account over the last `days` UTC days, newest first. */
    async movements(accountId: string, days: number) {
      const count = days > 0 ? Math.min(days, MAX_DAYS) : DEFAULT_DAYS;
      const from = recentDays(deps.now(), count)[0] ?? "";
      const [rows, ledgerBalance] = await Promise.all([
        records.creditMovements(accountId, from),
        records.creditBalance(accountId),
      ]);
      return {
        movements: rows.map((r) => ({ ...r, at: r.at.toISOString() })),
        ledgerBalance,
      };
    },

    /**
     * Applies what is still owed to the copy (a crash or a blip between the ledger and the copy),
     * and settles the credit leases no gateway returned (it died): what their use does not show
     * goes back to the balance.
     */
    async sweep(): Promise<number> {
      const settled = await store.expireCreditLeases(deps.now(), SWEEP_PAGE);
      if (settled > 0) logger.info({ leases: settled }, "settled credit leases their gateway did not return");
      const owed = await records.owedCredits(SWEEP_PAGE);
      if (owed.length === 0) return 0;
      return (await apply(owed)) ? owed.length : 0;
    },
  };
}

export type Credits = ReturnType<typeof createCredits>;
