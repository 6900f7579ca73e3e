// `ledger list|reconcile`: the settlement worker's payment ledger, through its admin API.

import { usdcOfAtomic } from "@tollgate/catalog";
import { type Command, count, only, positionals } from "../args.ts";
import { withLedger, withQuotaAdmin } from "../connect.ts";
import { UsageError } from "../errors.ts";
import { movementJson, reconcileJson, settlementJson } from "../output.ts";

const DAY_FLAG = /^\d{4}-\d{2}-\d{2}$/;

function blockNumber(value: string | undefined, flag: string): number {
  if (value === undefined) throw new UsageError(`ledger reconcile needs --${flag}`);
  if (!/^[0-9]{1,15}$/.test(value)) throw new UsageError(`--${flag} must be a block number`);
  return Number(value);
}

export const ledgerCommands: Record<string, Command> = {
  "ledger list": ({ command, flags, args }) => {
    positionals(args, [], command);
    // --account: the account's credit movements, from quota-meter's credit ledger.
    if (flags.account !== undefined) {
      only(flags, ["account", "days"], command);
      const accountId = flags.account;
      const days = count(flags.days, "days") ?? 0;
      return () =>
        withQuotaAdmin(async (admin) => {
          const listed = await admin.creditMovements(accountId, days);
          return {
            account_id: accountId,
            ledger_balance: listed.ledgerBalance,
            ledger_balance_usdc: usdcOfAtomic(listed.ledgerBalance),
            movements: listed.movements.map(movementJson),
          };
        });
    }
    only(flags, ["payer", "day", "channel", "outcome", "limit", "cursor"], command);
    if (!flags.payer && !flags.day && !flags.channel)
      throw new UsageError("ledger list needs at least one of --payer, --day, --channel (or --account)");
    if (flags.day !== undefined && !DAY_FLAG.test(flags.day))
      throw new UsageError("--day must be YYYY-MM-DD");
    const request = {
      payer: flags.payer ?? "",
      day: flags.day ?? "",
      channel: flags.channel ?? "",
      outcome: flags.outcome ?? "",
      limit: count(flags.limit, "limit") ?? 0,
      cursor: flags.cursor ?? "",
    };
    return () =>
      withLedger(async (ledger) => {
        const page = await ledger.list(request);
        return {
          settlements: page.settlements.map(settlementJson),
          next_cursor: page.nextCursor || null,
          totals: page.totals.map((t) => ({
            outcome: t.outcome,
            asset: t.asset,
            count: t.count,
            amount: t.amount,
          })),
        };
      });
  },

  "ledger reconcile": ({ command, flags, args }) => {
    only(flags, ["from-block", "to-block"], command);
    positionals(args, [], command);
    const from = blockNumber(flags["from-block"], "from-block");
    const to = blockNumber(flags["to-block"], "to-block");
    return () =>
      withLedger(async (ledger) => {
        const result = reconcileJson(await ledger.reconcile(from, to));
        // Differences are a finding, not a crash: the JSON still goes to stdout, the exit code says so.
        if (!result.reconciled) process.exitCode = 1;
        return result;
      });
  },
};
