// The tables of migrations/*.sql as kysely sees them (int8 arrive as numbers and dates as
// 'YYYY-MM-DD': libs/db's type parsers).
import type { ColumnType, Generated } from "kysely";

type Timestamp = ColumnType<Date, Date | string, Date | string>;

export interface QuotaTables {
  accounts: {
    id: string;
    name: string;
    status: string;
    daily_limit: number;
    monthly_limit: number;
    burst_per_second: number;
    /** 'standard' or 'free' (0003_account_plans.sql; the previous release's inserts get 'standard'). */
    plan: string;
    /** 0004_credits.sql: calls paid from credits only. */
    credits_only: ColumnType<boolean, boolean | undefined, boolean>;
    /** 0005_credit_adjustments.sql: a top-up's account, credits only until its wallet signs up. */
    sign_up_pending: ColumnType<boolean, boolean | undefined, boolean>;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  api_keys: {
    id: string;
    account_id: string;
    hash: Buffer;
    prefix: string;
    created_at: Timestamp;
    last_used_at: Timestamp | null;
    revoked_at: Timestamp | null;
  };
  usage_daily: {
    account_id: string;
    day: string;
    requests: number;
    errors: number;
    counted: number;
  };
  account_wallets: {
    address: string;
    account_id: string;
    created_at: Timestamp;
  };
  credit_ledger: {
    id: Generated<number>;
    account_id: string;
    /** 0005: "grant" and "deduct" are operators' adjustments (`operator`, `reason`). */
    kind: "top_up" | "draw" | "refund" | "grant" | "deduct";
    amount: number;
    cause: string;
    scheme: string | null;
    payment_network: string | null;
    transaction: string | null;
    operator: string | null;
    reason: string | null;
    generation: Generated<string>;
    unapplied: Generated<number>;
    created_at: ColumnType<Date, Date | string | undefined, Date | string>;
  };
  credit_seeds: {
    id: Generated<number>;
    generation: string;
    seeded_at: Generated<Timestamp>;
  };
  usage_batches: {
    id: string;
    calls: number;
    folded_at: Generated<Date>;
  };
}
