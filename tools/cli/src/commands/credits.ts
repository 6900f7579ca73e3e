// `credits adjust`: an operator's correction of an account's prepaid credits (a refund to a
// customer, a promotion, a correction after an incident), through quota-meter's admin API. Each is
// an audited ledger entry: who (--operator or TOLLGATE_OPERATOR), why (--reason), when (the ledger's
// time), under an adjustment id this command makes (printed; --id sends the same one again, which
// quota-meter applies once).
import { randomBytes } from "node:crypto";
import { priceAtomic, usdcOfAtomic } from "@tollgate/catalog";
import { type Command, only, positionals } from "../args.ts";
import { withQuotaAdmin } from "../connect.ts";
import { UsageError } from "../errors.ts";
import { movementJson } from "../output.ts";

/** Signed USDC with at most 6 decimals: +1, -0.25, 5. */
const AMOUNT = /^[+-]?(?:0|[1-9][0-9]{0,8})(?:\.[0-9]{1,6})?$/;
const ADJUSTMENT_ID = /^adj_[0-9a-f]{32}$/;

/** The adjustment's id: made here, once per command, unless --id repeats an earlier one's. */
const newAdjustmentId = () => `adj_${randomBytes(16).toString("hex")}`;

export const creditCommands: Record<string, Command> = {
  "credits adjust": ({ command, flags, args }) => {
    only(flags, ["reason", "operator", "id"], command);
    const [accountId = "", amountText = ""] = positionals(args, ["ACCOUNT_ID", "±AMOUNT"], command);
    if (!AMOUNT.test(amountText))
      throw new UsageError("±AMOUNT must be USDC with at most 6 decimals, e.g. +1 or -0.25");
    const sign = amountText.startsWith("-") ? -1 : 1;
    const atomic = sign * Number(priceAtomic(amountText.replace(/^[+-]/, "")));
    if (atomic === 0) throw new UsageError("±AMOUNT must not be 0");
    const reason = flags.reason?.trim();
    if (!reason) throw new UsageError("credits adjust needs --reason TEXT (kept in the ledger)");
    const operator = (flags.operator ?? process.env.TOLLGATE_OPERATOR ?? "").trim();
    if (!operator)
      throw new UsageError(
        "credits adjust needs --operator NAME or TOLLGATE_OPERATOR (who, kept in the ledger)",
      );
    if (flags.id !== undefined && !ADJUSTMENT_ID.test(flags.id))
      throw new UsageError("--id must be an adjustment id this command printed (adj_ and 32 hex digits)");
    const adjustmentId = flags.id ?? newAdjustmentId();
    return () =>
      withQuotaAdmin(async (admin) => {
        // Before the call: if its answer is lost, this id is how the operator retries it safely.
        process.stderr.write(
          `tollgate: adjustment ${adjustmentId} (if no answer comes, run again with --id ${adjustmentId}: applied once)\n`,
        );
        const done = await admin.adjustCredits({ accountId, amount: atomic, reason, operator, adjustmentId });
        return {
          account_id: accountId,
          applied: done.applied,
          adjustment: movementJson(done.adjustment),
          balance: done.balance,
          balance_usdc: usdcOfAtomic(done.balance),
        };
      });
  },
};
