// The operator CLI: `pnpm tollgate <command>` talks to a running quota-meter's admin gRPC API
// (accounts, keys) and the settlement worker's (the ledger). It speaks only gRPC to them and imports
// nothing of theirs; migrations are each service's own entry (`pnpm migrate`).
import { isPlanName, PLAN_NAMES } from "@tollgate/catalog";
import { defaultGrpcAddr } from "@tollgate/platform";
import { type Command, count, parse } from "./args.ts";
import { accountCommands } from "./commands/accounts.ts";
import { creditCommands } from "./commands/credits.ts";
import { keyCommands } from "./commands/keys.ts";
import { ledgerCommands } from "./commands/ledger.ts";
import { UsageError } from "./errors.ts";

const USAGE = `Usage: pnpm tollgate <command>

  account create --name NAME [--plan standard|free] [--daily N] [--monthly N] [--burst N]
                 [--credits-only yes|no]
  account show ACCOUNT_ID        the account, its credit balance and open credit leases
  account update ACCOUNT_ID [--status active|past_due|canceled|suspended] [--plan standard|free]
                 [--daily N] [--monthly N] [--burst N] [--credits-only yes|no]
  key create ACCOUNT_ID          prints the key once; it is never shown again
  key list ACCOUNT_ID
  key revoke ACCOUNT_ID KEY_ID
  quickstart [--name NAME] [--daily N] [--monthly N] [--burst N]
                                 an account and a key in one go
  credits adjust ACCOUNT_ID ±AMOUNT --reason TEXT [--operator NAME] [--id ADJ_ID]
                                 grants (+) or takes back (-) USDC of credits, never below zero:
                                 an audited ledger entry (who, why, when) under an id made here;
                                 --id sends a printed id again (applied once)
  ledger list [--payer ADDRESS] [--day YYYY-MM-DD] [--channel ID] [--outcome O] [--limit N] [--cursor C]
                                 settlements, newest first (at least one of payer, day, channel)
  ledger list --account ACCOUNT_ID [--days N]
                                 the account's credit movements, newest first: top-ups and
                                 adjustments one by one, draws by UTC day (default 30 days)
  ledger reconcile --from-block N --to-block N
                                 the ledger against the settlement chain's transfers to the receiver

Plans: accounts made here are on the standard plan (DAILY_LIMIT, MONTHLY_LIMIT on quota-meter: by
default 200000 a day, 2000000 a month); a first dashboard sign-in makes one on the free plan (FREE_*).
--plan moves an account to a plan and gives it the plan's figures, but for limits named beside it.
Limits: 0 means uncapped; omitted limits take the plan's figures.
Credits: an account whose plan is spent pays from its prepaid credits (POST /api/credits buys them);
--credits-only yes makes it pay every call from them. A wallet's account made by a top-up is credits
only until its wallet signs up on the dashboard.
Environment: QUOTA_METER_ADDR (default ${defaultGrpcAddr("quota-meter")}), SETTLEMENT_WORKER_ADDR (default
${defaultGrpcAddr("settlement-worker")}), OPERATOR_TOKEN or OPERATOR_TOKEN_FILE (default: the file .tollgate/operator-token
that \`pnpm start\` writes), GATEWAY_URL (for quickstart's example), TOLLGATE_OPERATOR (credits
adjust's --operator).
Migrations: \`pnpm migrate\` (each service's own, against DATABASE_URL or the embedded database).
Output is JSON. Exit codes: 0 ok, 1 failure (or differences found by reconcile), 2 usage.`;

const COMMANDS: Record<string, Command> = {
  ...accountCommands,
  ...keyCommands,
  ...creditCommands,
  ...ledgerCommands,
};

/** Commands of one word; the others are `<group> <action>`. */
const SINGLE = new Set(["quickstart"]);

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals: words } = parse(argv);
  if (values.help || words.length === 0) {
    if (values.help) return USAGE;
    throw new UsageError("no command given");
  }
  const { help: _help, ...flags } = values;
  const [group = "", action] = words;
  const single = SINGLE.has(group);
  const command = single ? group : `${group} ${action ?? ""}`.trim();
  // Validated for every command, before it is known, as they always were.
  const limits = {
    dailyLimit: count(flags.daily, "daily"),
    monthlyLimit: count(flags.monthly, "monthly"),
    burstPerSecond: count(flags.burst, "burst"),
  };
  if (flags.plan !== undefined && !isPlanName(flags.plan))
    throw new UsageError(`--plan must be one of ${PLAN_NAMES.join(", ")}`);
  const prepare = COMMANDS[command];
  if (!prepare) {
    if (group === "migrate") throw new UsageError("migrate is not a CLI command: run `pnpm migrate`");
    throw new UsageError(`unknown command "${words.join(" ")}"`);
  }
  // Everything is validated before connecting, so usage errors never depend on the server.
  const call = prepare({ command, flags, args: words.slice(single ? 1 : 2), limits });
  return call();
}

run(process.argv.slice(2)).then(
  (result) => {
    process.stdout.write(typeof result === "string" ? `${result}\n` : `${JSON.stringify(result, null, 2)}\n`);
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`tollgate: ${err.message}\n\n${USAGE}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`tollgate: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    }
  },
);
