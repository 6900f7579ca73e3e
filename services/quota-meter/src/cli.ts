// The operator CLI: `pnpm tollgate <command>` talks to a running quota-meter's admin gRPC API
// (accounts, keys), the settlement worker's (the ledger), or PostgreSQL itself (migrate).
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { isPlanName, PLAN_NAMES } from "@tollgate/catalog";
import { CallError, grpc, readSecret } from "@tollgate/platform";
import type { Account__Output } from "@tollgate/platform/generated/tollgate/quota/v1/Account";
import type { ApiKey__Output } from "@tollgate/platform/generated/tollgate/quota/v1/ApiKey";
import type { Settlement__Output } from "@tollgate/platform/generated/tollgate/settlement/v1/Settlement";
import type { LedgerClient } from "../../settlement-worker/src/admin-client.ts";
import { type AdminClient, createAdminClient } from "./admin-client.ts";

const USAGE = `Usage: pnpm tollgate <command>

  account create --name NAME [--plan standard|free] [--daily N] [--monthly N] [--burst N]
  account show ACCOUNT_ID
  account update ACCOUNT_ID [--status active|past_due|canceled|suspended] [--plan standard|free]
                 [--daily N] [--monthly N] [--burst N]
  key create ACCOUNT_ID          prints the key once; it is never shown again
  key list ACCOUNT_ID
  key revoke ACCOUNT_ID KEY_ID
  quickstart [--name NAME] [--daily N] [--monthly N] [--burst N]
                                 an account and a key in one go
  ledger list [--payer ADDRESS] [--day YYYY-MM-DD] [--channel ID] [--outcome O] [--limit N] [--cursor C]
                                 settlements, newest first (at least one of payer, day, channel)
  ledger reconcile --from-block N --to-block N
                                 the ledger against the settlement chain's transfers to the receiver
  migrate                        applies pending PostgreSQL migrations (quota-meter, settlement-worker)

Plans: accounts made here are on the standard plan (DAILY_LIMIT, MONTHLY_LIMIT on quota-meter: by
default 200000 a day, 2000000 a month); a first dashboard sign-in makes one on the free plan (FREE_*).
--plan moves an account to a plan and gives it the plan's figures, but for limits named beside it.
Limits: 0 means uncapped; omitted limits take the plan's figures.
Environment: QUOTA_METER_ADDR (default 127.0.0.1:50051), SETTLEMENT_WORKER_ADDR (default
127.0.0.1:50054), OPERATOR_TOKEN or OPERATOR_TOKEN_FILE (default: the file .tollgate/operator-token
that \`pnpm start\` writes), DATABASE_URL or DATABASE_URL_FILE for migrate (default: the embedded
database \`pnpm start\` runs, .tollgate/database-url), GATEWAY_URL (for quickstart's example).
Output is JSON. Exit codes: 0 ok, 1 failure (or differences found by reconcile), 2 usage.`;

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));

class UsageError extends Error {}
class Failure extends Error {}

type Flags = {
  name?: string;
  daily?: string;
  monthly?: string;
  burst?: string;
  plan?: string;
  status?: string;
  payer?: string;
  day?: string;
  channel?: string;
  outcome?: string;
  limit?: string;
  cursor?: string;
  "from-block"?: string;
  "to-block"?: string;
};
type FlagName = keyof Flags;

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        name: { type: "string" },
        daily: { type: "string" },
        monthly: { type: "string" },
        burst: { type: "string" },
        plan: { type: "string" },
        status: { type: "string" },
        payer: { type: "string" },
        day: { type: "string" },
        channel: { type: "string" },
        outcome: { type: "string" },
        limit: { type: "string" },
        cursor: { type: "string" },
        "from-block": { type: "string" },
        "to-block": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

function count(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]{1,13}$/.test(value)) throw new UsageError(`--${flag} must be a non-negative integer`);
  return Number(value);
}

function only(flags: Flags, allowed: FlagName[], command: string): void {
  for (const [flag, value] of Object.entries(flags)) {
    if (value !== undefined && !allowed.includes(flag as FlagName)) {
      throw new UsageError(`${command} does not take --${flag}`);
    }
  }
}

function positionals(args: string[], names: string[], command: string): string[] {
  if (args.length !== names.length) {
    throw new UsageError(`${command} takes ${names.length ? names.join(" ") : "no arguments"}`);
  }
  return args;
}

function operatorToken(): string {
  const token = readSecret("OPERATOR_TOKEN");
  if (token) return token;
  const file = `${REPO_ROOT}.tollgate/operator-token`;
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  throw new Failure(
    "no operator token: set OPERATOR_TOKEN (or OPERATOR_TOKEN_FILE), or start the local stack with `pnpm start`, which writes .tollgate/operator-token",
  );
}

function accountJson(a: Account__Output | null | undefined) {
  if (!a) throw new Failure("quota-meter returned no account");
  return {
    id: a.id,
    name: a.name,
    status: a.status,
    daily_limit: a.dailyLimit,
    monthly_limit: a.monthlyLimit,
    burst_per_second: a.burstPerSecond,
    plan: a.plan,
    created_at: a.createdAt,
  };
}

function keyJson(k: ApiKey__Output | null | undefined) {
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

/** The database `migrate` works on: DATABASE_URL, else the embedded one `pnpm start` runs. */
function databaseUrl(): string {
  const url = readSecret("DATABASE_URL");
  if (url) return url;
  const file = `${REPO_ROOT}.tollgate/database-url`;
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  throw new Failure(
    "no database: set DATABASE_URL (or DATABASE_URL_FILE), or start the local stack with `pnpm start`, which writes .tollgate/database-url",
  );
}

async function migrateAll(): Promise<unknown> {
  const [{ migrate, openDatabase }, { createLogger }, quota, worker] = await Promise.all([
    import("@tollgate/db"),
    import("@tollgate/platform"),
    import("./db/migrations.ts"),
    // The operator's tool migrates every service's tables; no service imports another's.
    import("../../settlement-worker/src/migrations.ts"),
  ]);
  const database = openDatabase({
    url: databaseUrl(),
    logger: createLogger("tollgate-cli"),
    applicationName: "tollgate-cli",
  });
  try {
    const applied: Record<string, string[]> = {};
    for (const set of [quota.MIGRATIONS, worker.MIGRATIONS])
      applied[set.owner] = await migrate(database.db, set);
    return { database: database.where, applied };
  } catch (err) {
    throw new Failure(
      `migration failed on ${database.where}: ${err instanceof Error ? err.message : String(err)}`,
    );
  } finally {
    await database.close();
  }
}

const DAY_FLAG = /^\d{4}-\d{2}-\d{2}$/;

function blockNumber(value: string | undefined, flag: string): number {
  if (value === undefined) throw new UsageError(`ledger reconcile needs --${flag}`);
  if (!/^[0-9]{1,15}$/.test(value)) throw new UsageError(`--${flag} must be a block number`);
  return Number(value);
}

function settlementJson(e: Settlement__Output) {
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

function explain(err: unknown, addr: string, service = "quota-meter", env = "QUOTA_METER_ADDR"): Failure {
  if (!(err instanceof CallError)) return new Failure(err instanceof Error ? err.message : String(err));
  const { grpcCode, message } = err.failure;
  switch (grpcCode) {
    case grpc.status.UNAVAILABLE:
      if (err.failure.code === "service_unavailable") return new Failure(message);
      return new Failure(`cannot reach ${service} at ${addr}: is it running? (set ${env})`);
    case grpc.status.DEADLINE_EXCEEDED:
      return new Failure(`cannot reach ${service} at ${addr}: is it running? (set ${env})`);
    case grpc.status.UNAUTHENTICATED:
      return new Failure(
        "the operator token was refused: check OPERATOR_TOKEN (or .tollgate/operator-token) matches the service's",
      );
    default:
      return new Failure(message);
  }
}

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals: args } = parse(argv);
  if (values.help || args.length === 0) {
    if (values.help) return USAGE;
    throw new UsageError("no command given");
  }
  const { help: _help, ...flags } = values;
  const [group, action, ...rest] = args;
  const command = group === "quickstart" || group === "migrate" ? group : `${group} ${action ?? ""}`.trim();
  const limits = {
    dailyLimit: count(flags.daily, "daily"),
    monthlyLimit: count(flags.monthly, "monthly"),
    burstPerSecond: count(flags.burst, "burst"),
  };
  if (flags.plan !== undefined && !isPlanName(flags.plan))
    throw new UsageError(`--plan must be one of ${PLAN_NAMES.join(", ")}`);
  const defined = <T extends object>(o: T) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

  // Validate everything before connecting, so usage errors never depend on the server.
  let call: (admin: AdminClient) => Promise<unknown>;
  switch (command) {
    case "migrate": {
      only(flags, [], command);
      positionals(action === undefined ? [] : [action, ...rest], [], command);
      return migrateAll();
    }
    case "ledger list": {
      only(flags, ["payer", "day", "channel", "outcome", "limit", "cursor"], command);
      positionals(rest, [], command);
      if (!flags.payer && !flags.day && !flags.channel)
        throw new UsageError("ledger list needs at least one of --payer, --day, --channel");
      if (flags.day !== undefined && !DAY_FLAG.test(flags.day))
        throw new UsageError("--day must be YYYY-MM-DD");
      const limit = count(flags.limit, "limit");
      const request = {
        payer: flags.payer ?? "",
        day: flags.day ?? "",
        channel: flags.channel ?? "",
        outcome: flags.outcome ?? "",
        limit: limit ?? 0,
        cursor: flags.cursor ?? "",
      };
      return ledgerCall(async (ledger) => {
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
    }
    case "ledger reconcile": {
      only(flags, ["from-block", "to-block"], command);
      positionals(rest, [], command);
      const from = blockNumber(flags["from-block"], "from-block");
      const to = blockNumber(flags["to-block"], "to-block");
      return ledgerCall(async (ledger) => {
        const r = await ledger.reconcile(from, to);
        const result = {
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
        // Differences are a finding, not a crash: the JSON still goes to stdout, the exit code says so.
        if (!result.reconciled) process.exitCode = 1;
        return result;
      });
    }
    case "account create": {
      only(flags, ["name", "plan", "daily", "monthly", "burst"], command);
      positionals(action === undefined ? [] : rest, [], command);
      if (!flags.name) throw new UsageError("account create needs --name");
      const name = flags.name;
      const req = { name, ...defined({ plan: flags.plan, ...limits }) };
      call = async (admin) => ({ account: accountJson((await admin.createAccount(req)).account) });
      break;
    }
    case "account show": {
      only(flags, [], command);
      const [accountId = ""] = positionals(rest, ["ACCOUNT_ID"], command);
      call = async (admin) => ({ account: accountJson((await admin.getAccount(accountId)).account) });
      break;
    }
    case "account update": {
      only(flags, ["status", "plan", "daily", "monthly", "burst"], command);
      const [accountId = ""] = positionals(rest, ["ACCOUNT_ID"], command);
      const patch = { accountId, ...defined({ status: flags.status, plan: flags.plan, ...limits }) };
      if (Object.keys(patch).length === 1) {
        throw new UsageError(
          "account update needs at least one of --status, --plan, --daily, --monthly, --burst",
        );
      }
      call = async (admin) => ({ account: accountJson((await admin.updateAccount(patch)).account) });
      break;
    }
    case "key create": {
      only(flags, [], command);
      const [accountId = ""] = positionals(rest, ["ACCOUNT_ID"], command);
      call = async (admin) => {
        const created = await admin.createKey(accountId);
        return { key: keyJson(created.key), api_key: created.secret };
      };
      break;
    }
    case "key list": {
      only(flags, [], command);
      const [accountId = ""] = positionals(rest, ["ACCOUNT_ID"], command);
      call = async (admin) => ({ keys: (await admin.listKeys(accountId)).keys.map(keyJson) });
      break;
    }
    case "key revoke": {
      only(flags, [], command);
      const [accountId = "", keyId = ""] = positionals(rest, ["ACCOUNT_ID", "KEY_ID"], command);
      call = async (admin) => ({ key: keyJson((await admin.revokeKey(accountId, keyId)).key) });
      break;
    }
    case "quickstart": {
      only(flags, ["name", "daily", "monthly", "burst"], command);
      positionals(action === undefined ? [] : [action, ...rest], [], command);
      const name = flags.name ?? "quickstart";
      call = async (admin) => {
        const created = await admin.quickstart(name, {
          ...defined({
            daily: limits.dailyLimit,
            monthly: limits.monthlyLimit,
            burst: limits.burstPerSecond,
          }),
        });
        const account = accountJson(created.account);
        const gateway = (process.env.GATEWAY_URL ?? "http://127.0.0.1:8080").replace(/\/$/, "");
        return {
          account,
          key: keyJson(created.key),
          api_key: created.secret,
          example: `curl -H "Authorization: Bearer ${created.secret}" ${gateway}/api/chain/block-number`,
        };
      };
      break;
    }
    default:
      throw new UsageError(`unknown command "${args.join(" ")}"`);
  }

  const addr = process.env.QUOTA_METER_ADDR || "127.0.0.1:50051";
  const token = operatorToken();
  const admin = createAdminClient(addr, token, 5_000);
  try {
    return await call(admin);
  } catch (err) {
    throw explain(err, addr);
  } finally {
    admin.close();
  }
}

/** Runs `fn` against the settlement worker's admin API. */
async function ledgerCall(fn: (ledger: LedgerClient) => Promise<unknown>): Promise<unknown> {
  const addr = process.env.SETTLEMENT_WORKER_ADDR || "127.0.0.1:50054";
  const { createLedgerClient } = await import("../../settlement-worker/src/admin-client.ts");
  const ledger = createLedgerClient(addr, operatorToken());
  try {
    return await fn(ledger);
  } catch (err) {
    throw explain(err, addr, "the settlement worker", "SETTLEMENT_WORKER_ADDR");
  } finally {
    ledger.close();
  }
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
