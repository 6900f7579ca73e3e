// The plans a new account can join, as this deployment configures them: the operator's standard plan
// (DAILY_LIMIT, MONTHLY_LIMIT) and the free plan of self-serve sign-up (FREE_*). An account keeps
// its own limits, set from its plan's figures when it joins (created, or moved with UpdateAccount).
import { isPlanName, type PlanFigures, type PlanName } from "@tollgate/catalog";
import { grpc } from "@tollgate/platform";
import type { DescribePlansResponse } from "@tollgate/platform/generated/tollgate/quota/v1/DescribePlansResponse";
import type { QuotaMeterConfig } from "./config.ts";
import { fail } from "./key-ops.ts";

/** What each plan gives an account that joins it, as stored (burst 0 = the service default guard). */
export type PlanBook = Record<PlanName, PlanFigures>;

export function planBook(
  config: Pick<QuotaMeterConfig, "defaultDailyLimit" | "defaultMonthlyLimit" | "freePlan">,
): PlanBook {
  return {
    standard: {
      dailyLimit: config.defaultDailyLimit,
      monthlyLimit: config.defaultMonthlyLimit,
      burstPerSecond: 0,
    },
    free: { ...config.freePlan },
  };
}

/** A plan name from a request, or INVALID_ARGUMENT naming the field. */
export function planOf(value: string, field: string): PlanName {
  if (!isPlanName(value))
    fail(grpc.status.INVALID_ARGUMENT, "invalid_argument", `${field}: expected standard or free`);
  return value;
}

/** DescribePlans: each plan's figures as Authorize enforces them (the default burst guard applied). */
export function describePlans(book: PlanBook, defaultBurst: number): DescribePlansResponse {
  const plan = (name: PlanName) => ({
    name,
    dailyLimit: book[name].dailyLimit,
    monthlyLimit: book[name].monthlyLimit,
    burstPerSecond: book[name].burstPerSecond || defaultBurst,
  });
  return { standard: plan("standard"), free: plan("free") };
}
