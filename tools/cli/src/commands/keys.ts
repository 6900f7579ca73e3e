// `key create|list|revoke`: an account's API keys, through quota-meter's admin API. A key's secret
// is printed once, by `key create`; listing and revoking show only its prefix.
import { type Command, only, positionals } from "../args.ts";
import { withQuotaAdmin } from "../connect.ts";
import { keyJson } from "../output.ts";

export const keyCommands: Record<string, Command> = {
  "key create": ({ command, flags, args }) => {
    only(flags, [], command);
    const [accountId = ""] = positionals(args, ["ACCOUNT_ID"], command);
    return () =>
      withQuotaAdmin(async (admin) => {
        const created = await admin.createKey(accountId);
        return { key: keyJson(created.key), api_key: created.secret };
      });
  },

  "key list": ({ command, flags, args }) => {
    only(flags, [], command);
    const [accountId = ""] = positionals(args, ["ACCOUNT_ID"], command);
    return () =>
      withQuotaAdmin(async (admin) => ({ keys: (await admin.listKeys(accountId)).keys.map(keyJson) }));
  },

  "key revoke": ({ command, flags, args }) => {
    only(flags, [], command);
    const [accountId = "", keyId = ""] = positionals(args, ["ACCOUNT_ID", "KEY_ID"], command);
    return () =>
      withQuotaAdmin(async (admin) => ({ key: keyJson((await admin.revokeKey(accountId, keyId)).key) }));
  },
};
