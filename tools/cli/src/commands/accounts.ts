// `account create|show|update` and `quickstart`: quota-meter's accounts, through its admin API.
import { type Command, defined, only, positionals, yesNo } from "../args.ts";
import { withQuotaAdmin } from "../connect.ts";
import { UsageError } from "../errors.ts";
import { accountJson, creditsJson, keyJson } from "../output.ts";

export const accountCommands: Record<string, Command> = {
  "account create": ({ command, flags, args, limits }) => {
    only(flags, ["name", "plan", "daily", "monthly", "burst", "credits-only"], command);
    positionals(args, [], command);
    if (!flags.name) throw new UsageError("account create needs --name");
    const creditsOnly = yesNo(flags["credits-only"], "credits-only");
    const req = { name: flags.name, ...defined({ plan: flags.plan, creditsOnly, ...limits }) };
    return () =>
      withQuotaAdmin(async (admin) => ({ account: accountJson((await admin.createAccount(req)).account) }));
  },

  "account show": ({ command, flags, args }) => {
    only(flags, [], command);
    const [accountId = ""] = positionals(args, ["ACCOUNT_ID"], command);
    return () =>
      withQuotaAdmin(async (admin) => {
        const { account, credits } = await admin.getAccount(accountId);
        return { account: accountJson(account), credits: creditsJson(credits) };
      });
  },

  "account update": ({ command, flags, args, limits }) => {
    only(flags, ["status", "plan", "daily", "monthly", "burst", "credits-only"], command);
    const [accountId = ""] = positionals(args, ["ACCOUNT_ID"], command);
    const creditsOnly = yesNo(flags["credits-only"], "credits-only");
    const patch = {
      accountId,
      ...defined({ status: flags.status, plan: flags.plan, creditsOnly, ...limits }),
    };
    if (Object.keys(patch).length === 1) {
      throw new UsageError(
        "account update needs at least one of --status, --plan, --daily, --monthly, --burst, --credits-only",
      );
    }
    return () =>
      withQuotaAdmin(async (admin) => ({ account: accountJson((await admin.updateAccount(patch)).account) }));
  },

  quickstart: ({ command, flags, args, limits }) => {
    only(flags, ["name", "daily", "monthly", "burst"], command);
    positionals(args, [], command);
    const name = flags.name ?? "quickstart";
    const plan = defined({
      daily: limits.dailyLimit,
      monthly: limits.monthlyLimit,
      burst: limits.burstPerSecond,
    });
    return () =>
      withQuotaAdmin(async (admin) => {
        const created = await admin.quickstart(name, plan);
        const account = accountJson(created.account);
        const gateway = (process.env.GATEWAY_URL ?? "http://127.0.0.1:8080").replace(/\/$/, "");
        return {
          account,
          key: keyJson(created.key),
          api_key: created.secret,
          example: `curl -H "Authorization: Bearer ${created.secret}" ${gateway}/api/chain/block-number`,
        };
      });
  },
};
