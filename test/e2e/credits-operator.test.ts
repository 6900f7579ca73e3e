// Issue 40, finding 7: operators see and correct credits with the CLI (`pnpm tollgate`, run as a
// process against the shared mesh's quota-meter): `account show` prints the balance and the open
// credit leases, `credits adjust` writes an audited ledger entry (who, why, when) applied once per
// adjustment id and never below zero, `ledger list --account` lists the account's movements. The
// credits are bought for real with the official @x402/fetch client and spent by a keyed call.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { ledgerBalance } from "../support/credits.ts";
import { devnet } from "../support/devnet.ts";
import { eventually } from "../support/eventually.ts";
import { mesh } from "../support/gateway.ts";
import { runProcess } from "../support/run-process.ts";
import { sendUsdc, x402PayerOfKey } from "../support/x402.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(REPO, "tools/cli/src/main.ts");

/** `pnpm tollgate …` against the shared mesh, as an operator runs it. */
function tollgate(args: string[], env: Record<string, string | undefined> = {}) {
  return runProcess(process.execPath, [CLI, ...args], {
    cwd: REPO,
    env: {
      ...process.env,
      QUOTA_METER_ADDR: mesh.quotaMeterAddr,
      OPERATOR_TOKEN: mesh.operatorToken,
      OPERATOR_TOKEN_FILE: undefined,
      TOLLGATE_OPERATOR: undefined,
      ...env,
    },
  });
}

/** The JSON a command printed (it must have succeeded). */
async function json(args: string[], env: Record<string, string | undefined> = {}) {
  const out = await tollgate(args, env);
  expect(out.code, out.stderr).toBe(0);
  return JSON.parse(out.stdout);
}

interface Movement {
  kind: string;
  amount: number;
  at: string;
  day: string;
  id: string | null;
  operator?: string;
  reason?: string;
  scheme?: string;
}

describe("operators see and correct credits (pnpm tollgate)", () => {
  it("account show → credits adjust +1 → a keyed call spends → credits adjust -0.5 (once per id, never below zero) → ledger list --account", async () => {
    // A fresh wallet buys 1 USDC of credits with @x402/fetch: its account is credits only.
    const walletKey = generatePrivateKey();
    await sendUsdc(devnet, "payer8", privateKeyToAccount(walletKey).address, 1_000_000n);
    const bought = await x402PayerOfKey(devnet, walletKey).fetch(`${mesh.gatewayUrl}/api/credits?amount=1`, {
      method: "POST",
    });
    expect(bought.status).toBe(200);
    const accountId = ((await bought.json()) as { data: { account_id: string } }).data.account_id;

    const shown = await json(["account", "show", accountId]);
    expect(shown.account).toMatchObject({ id: accountId, credits_only: true });
    expect(shown.credits).toEqual({
      balance: 1_000_000,
      balance_usdc: "1",
      ledger_balance: 1_000_000,
      open_leases: [],
    });

    // A grant: who from TOLLGATE_OPERATOR, why from --reason.
    const granted = await json(["credits", "adjust", accountId, "+1", "--reason", "promotion: launch week"], {
      TOLLGATE_OPERATOR: "alice",
    });
    expect(granted).toMatchObject({
      account_id: accountId,
      applied: true,
      balance: 2_000_000,
      balance_usdc: "2",
      adjustment: {
        kind: "adjustment",
        amount: 1_000_000,
        operator: "alice",
        reason: "promotion: launch week",
      },
    });
    expect(granted.adjustment.id).toMatch(/^adj_[0-9a-f]{32}$/);
    expect((await json(["account", "show", accountId])).credits).toMatchObject({
      balance: 2_000_000,
      ledger_balance: 2_000_000,
    });

    // A keyed call spends from it (chain-id: 0.001); the gateway holds a credit lease meanwhile.
    const { api_key: apiKey } = await json(["key", "create", accountId]);
    const call = await fetch(`${mesh.gatewayUrl}/api/chain/chain-id?network=ethereum`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(call.status).toBe(200);
    expect(call.headers.get("x-credits-remaining")).toBe("1.999");
    const spent = await eventually(
      async () => (await json(["account", "show", accountId])).credits,
      (c) => c.balance === 1_999_000 && c.ledger_balance === 1_999_000,
    );
    expect(spent).toMatchObject({ balance: 1_999_000, ledger_balance: 1_999_000 });

    // Taking back 0.5: --operator names who; the same id sent again applies nothing more.
    const deducted = await json([
      "credits",
      "adjust",
      accountId,
      "-0.5",
      "--reason",
      "incident 7: double credit",
      "--operator",
      "bob",
    ]);
    expect(deducted).toMatchObject({
      applied: true,
      balance: 1_499_000,
      adjustment: { amount: -500_000, operator: "bob", reason: "incident 7: double credit" },
    });
    const retried = await json([
      "credits",
      "adjust",
      accountId,
      "-0.5",
      "--reason",
      "incident 7: double credit",
      "--operator",
      "bob",
      "--id",
      deducted.adjustment.id,
    ]);
    expect(retried).toMatchObject({
      applied: false,
      balance: 1_499_000,
      adjustment: { id: deducted.adjustment.id },
    });
    // The same id for another amount is refused, not applied.
    const reused = await tollgate(
      [
        "credits",
        "adjust",
        accountId,
        "-0.25",
        "--reason",
        "x",
        "--operator",
        "bob",
        "--id",
        deducted.adjustment.id,
      ],
      {},
    );
    expect(reused.code).toBe(1);
    expect(reused.stderr).toContain("was made for another account or amount");

    // Below zero is refused, naming the balance; nothing is written.
    const below = await tollgate([
      "credits",
      "adjust",
      accountId,
      "-2",
      "--reason",
      "too much",
      "--operator",
      "bob",
    ]);
    expect(below.code).toBe(1);
    expect(below.stderr).toContain("the balance is 1499000 atomic units");
    expect((await json(["account", "show", accountId])).credits).toMatchObject({
      balance: 1_499_000,
      ledger_balance: 1_499_000,
    });
    expect(await ledgerBalance(mesh.databaseUrl, accountId)).toBe(1_499_000);

    // The movements: the top-up, today's draws, both adjustments with who, why and when.
    const listed = await json(["ledger", "list", "--account", accountId]);
    expect(listed).toMatchObject({ account_id: accountId, ledger_balance: 1_499_000 });
    const movements = listed.movements as Movement[];
    const today = new Date().toISOString().slice(0, 10);
    expect(movements.map((m) => [m.kind, m.amount]).sort()).toEqual(
      [
        ["adjustment", -500_000],
        ["adjustment", 1_000_000],
        ["draws", -1_000],
        ["top_up", 1_000_000],
      ].sort(),
    );
    expect(movements.find((m) => m.kind === "top_up")).toMatchObject({ scheme: "exact", day: today });
    expect(movements.find((m) => m.kind === "draws")).toMatchObject({ day: today, id: null });
    const adjustments = movements.filter((m) => m.kind === "adjustment");
    expect(adjustments.map((m) => [m.operator, m.reason, m.id])).toEqual([
      ["bob", "incident 7: double credit", deducted.adjustment.id],
      ["alice", "promotion: launch week", granted.adjustment.id],
    ]);
    for (const m of adjustments) expect(Date.parse(m.at)).toBeGreaterThan(Date.now() - 10 * 60_000);
  });

  it("credits adjust needs who and why, and a well-formed amount, before it connects", async () => {
    for (const [args, message] of [
      [["credits", "adjust", "acct_x", "+1", "--operator", "a"], "needs --reason"],
      [["credits", "adjust", "acct_x", "+1", "--reason", "r"], "needs --operator NAME or TOLLGATE_OPERATOR"],
      [
        ["credits", "adjust", "acct_x", "1.0000001", "--reason", "r", "--operator", "a"],
        "at most 6 decimals",
      ],
      [["credits", "adjust", "acct_x", "-0", "--reason", "r", "--operator", "a"], "must not be 0"],
      [
        ["credits", "adjust", "acct_x", "1", "--reason", "r", "--operator", "a", "--id", "mine"],
        "--id must be",
      ],
    ] as const) {
      const out = await tollgate([...args], { QUOTA_METER_ADDR: "127.0.0.1:1" });
      expect(out.code, args.join(" ")).toBe(2);
      expect(out.stderr).toContain(message);
    }
  });
});
