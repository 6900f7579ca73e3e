// A sign-up of a wallet whose account a credits top-up made (issue 40): that account is credits only
// until the wallet's dashboard sign-up (the sign-up policy applied) moves it to the free plan. Part
// of Records (records.ts), which hands over its row mapping.
import type { Kysely, Selectable } from "kysely";
import { sql } from "kysely";
import type { AccountRecord } from "../store/types.ts";
import type { QuotaTables } from "./schema.ts";

export function signUps(
  db: Kysely<QuotaTables>,
  toAccount: (row: Selectable<QuotaTables["accounts"]>) => AccountRecord,
) {
  return {
    /**
     * A sign-up of a wallet whose account a top-up made: the account joins `plan` (the free plan's
     * figures, no longer credits only), once, serialized per address as the first sign-in is.
     * Undefined when the wallet's account is not waiting for a sign-up (any more).
     */
    async joinPlanAtSignUp(
      address: string,
      plan: Pick<AccountRecord, "plan" | "dailyLimit" | "monthlyLimit" | "burstPerSecond">,
      at: string,
      andThen: (a: AccountRecord) => Promise<void>,
    ): Promise<AccountRecord | undefined> {
      return db.transaction().execute(async (tx) => {
        await sql`select pg_advisory_xact_lock(hashtext(${`wallet:${address}`}))`.execute(tx);
        const row = await tx
          .updateTable("accounts")
          .set({
            plan: plan.plan,
            daily_limit: plan.dailyLimit,
            monthly_limit: plan.monthlyLimit,
            burst_per_second: plan.burstPerSecond,
            credits_only: false,
            sign_up_pending: false,
            updated_at: at,
          })
          .where("sign_up_pending", "=", true)
          .where("id", "in", (eb) =>
            eb.selectFrom("account_wallets").select("account_id").where("address", "=", address),
          )
          .returningAll()
          .executeTakeFirst();
        if (!row) return undefined;
        const joined = toAccount(row);
        await andThen(joined);
        return joined;
      });
    },
  };
}
