import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATOR_TOKEN, startTestMeter, type TestMeter } from "../quota-meter/helpers.ts";
import { runProcess } from "../support/run-process.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(REPO, "tools/cli/src/main.ts");
let qm: TestMeter;
let tmp: string;

beforeAll(async () => {
  qm = await startTestMeter();
  tmp = mkdtempSync(join(tmpdir(), "qm-cli-"));
});

afterAll(async () => {
  await qm?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

/** Runs `pnpm tollgate …` the way the root script does (node tools/cli/src/main.ts). */
function tollgate(args: string[], env: Record<string, string | undefined> = {}) {
  return runProcess(process.execPath, [CLI, ...args], {
    cwd: REPO,
    env: {
      ...process.env,
      QUOTA_METER_ADDR: `127.0.0.1:${qm.handle.grpcPort}`,
      OPERATOR_TOKEN,
      OPERATOR_TOKEN_FILE: undefined,
      ...env,
    },
  });
}

describe("pnpm tollgate (operator CLI)", () => {
  it("quickstart creates an account and a key and prints JSON with the key once", async () => {
    const out = await tollgate(["quickstart", "--name", "cli test", "--daily", "1000"]);
    expect(out.code).toBe(0);
    const json = JSON.parse(out.stdout);
    expect(json.account).toMatchObject({
      name: "cli test",
      status: "active",
      daily_limit: 1000,
      monthly_limit: 2_000_000,
    });
    expect(json.api_key).toMatch(/^tg_live_[A-Za-z0-9_-]{43}$/);
    expect(json.key.prefix).toBe(json.api_key.slice(0, 12));
    // The key works.
    expect((await qm.meter.authorize(json.api_key)).decision).toBe("DECISION_ALLOW");

    const listed = await tollgate(["key", "list", json.account.id]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).keys).toEqual([json.key]);
    expect(listed.stdout).not.toContain(json.api_key);
  });

  it("makes an account pay from prepaid credits only: --credits-only yes|no", async () => {
    const id = JSON.parse(
      (await tollgate(["account", "create", "--name", "Credits", "--credits-only", "yes"])).stdout,
    ).account.id;
    expect(JSON.parse((await tollgate(["account", "show", id])).stdout).account).toMatchObject({
      credits_only: true,
      plan: "standard",
    });
    const wrong = await tollgate(["account", "update", id, "--credits-only", "maybe"]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("--credits-only must be yes or no");
    const back = await tollgate(["account", "update", id, "--credits-only", "no"]);
    expect(JSON.parse(back.stdout).account.credits_only).toBe(false);
  });

  it("manages accounts and keys: create, show, update, key create, revoke", async () => {
    const created = JSON.parse(
      (await tollgate(["account", "create", "--name", "Acme", "--monthly", "0"])).stdout,
    );
    const id = created.account.id;
    expect(created.account).toMatchObject({
      name: "Acme",
      monthly_limit: 0,
      daily_limit: 200_000,
      plan: "standard",
      credits_only: false,
    });

    const shown = await tollgate(["account", "show", id]);
    expect(JSON.parse(shown.stdout)).toEqual({
      ...created,
      credits: { balance: 0, balance_usdc: "0", ledger_balance: 0, open_leases: [] },
    });

    const updated = await tollgate(["account", "update", id, "--status", "suspended", "--burst", "10"]);
    expect(JSON.parse(updated.stdout).account).toMatchObject({ status: "suspended", burst_per_second: 10 });

    // --plan moves the account and gives it the plan's figures, but for a limit named beside it.
    const moved = await tollgate(["account", "update", id, "--plan", "free", "--daily", "77"]);
    expect(JSON.parse(moved.stdout).account).toMatchObject({
      plan: "free",
      daily_limit: 77,
      monthly_limit: 10_000,
      burst_per_second: 5,
    });
    const back = await tollgate(["account", "update", id, "--plan", "standard", "--burst", "10"]);
    expect(JSON.parse(back.stdout).account).toMatchObject({
      plan: "standard",
      daily_limit: 200_000,
      monthly_limit: 2_000_000,
      burst_per_second: 10,
    });

    const key = JSON.parse((await tollgate(["key", "create", id])).stdout);
    expect(key.api_key).toMatch(/^tg_live_/);
    expect((await qm.meter.authorize(key.api_key)).decision).toBe("DECISION_SUBSCRIPTION_INACTIVE");

    const revoked = await tollgate(["key", "revoke", id, key.key.id]);
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout).key.revoked_at).toMatch(/^\d{4}-/);
    expect(revoked.stdout).not.toContain(key.api_key);
    expect((await qm.meter.authorize(key.api_key)).decision).toBe("DECISION_INVALID_KEY");
  });

  it("reads the operator token from a file", async () => {
    const file = join(tmp, "operator-token");
    writeFileSync(file, `${OPERATOR_TOKEN}\n`);
    const out = await tollgate(["account", "create", "--name", "from-file"], {
      OPERATOR_TOKEN: undefined,
      OPERATOR_TOKEN_FILE: file,
    });
    expect(out.code).toBe(0);
  });

  it("exits 2 on usage errors and 1 on failures, with a clear message", async () => {
    for (const args of [
      [],
      ["account"],
      ["account", "create"],
      ["key", "create"],
      ["account", "create", "--name", "x", "--daily", "-1"],
      ["bogus"],
      ["account", "show", "a", "--daily", "3"],
      ["ledger", "list"],
      ["ledger", "list", "--day", "21/11/2026"],
      ["ledger", "reconcile", "--from-block", "1"],
      ["ledger", "reconcile", "--from-block", "x", "--to-block", "2"],
      // `migrate` left the CLI for `pnpm migrate` (test/db/migrate-command.test.ts).
      ["migrate"],
      ["migrate", "now"],
      ["account", "update", "acct_x", "--plan", "gold"],
      ["account", "update", "acct_x"],
      ["quickstart", "--plan", "free"],
    ]) {
      const out = await tollgate(args);
      expect(out.code, args.join(" ")).toBe(2);
      expect(out.stderr).toContain("Usage: pnpm tollgate");
      expect(out.stdout).toBe("");
    }
    const missing = await tollgate(["account", "show", "acct_nope"]);
    expect(missing).toMatchObject({ code: 1, stdout: "" });
    expect(missing.stderr).toContain("no account acct_nope");

    const badToken = await tollgate(["key", "list", "acct_nope"], { OPERATOR_TOKEN: "wrong" });
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toContain("operator token was refused");

    const down = await tollgate(["key", "list", "acct_nope"], { QUOTA_METER_ADDR: "127.0.0.1:1" });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain("cannot reach quota-meter at 127.0.0.1:1");

    const noWorker = await tollgate(["ledger", "list", "--day", "2026-11-21"], {
      SETTLEMENT_WORKER_ADDR: "127.0.0.1:1",
    });
    expect(noWorker.code).toBe(1);
    expect(noWorker.stderr).toContain("cannot reach the settlement worker at 127.0.0.1:1");

    const help = await tollgate(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("quickstart");
    // About twenty CLI processes, each loading its sources: minutes on a loaded 2-core machine.
  }, 180_000);

  it("account show lists the credit leases open on the account and what they still hold", async () => {
    const id = JSON.parse(
      (await tollgate(["account", "create", "--name", "Leases", "--credits-only", "yes"])).stdout,
    ).account.id;
    const granted = await tollgate([
      "credits",
      "adjust",
      id,
      "+1",
      "--reason",
      "test grant",
      "--operator",
      "ci",
    ]);
    expect(granted.code, granted.stderr).toBe(0);
    const apiKey = JSON.parse((await tollgate(["key", "create", id])).stdout).api_key;
    // A gateway's Authorize of a lease of 10 calls at 0.001: a credit lease of 10,000 atomic units.
    const lease = await qm.meter.raw.call("Authorize", {
      requestId: "req-lease",
      apiKey,
      endpoint: "/api/chain/block-number",
      network: "ethereum",
      leaseUnits: 10,
      authorizationId: "lease-cli-1",
      priceAtomic: 1_000,
    });
    expect(lease).toMatchObject({ decision: "DECISION_ALLOW" });
    const shown = JSON.parse((await tollgate(["account", "show", id])).stdout);
    const held = lease.credits?.drawn ?? 0;
    expect(held).toBeGreaterThan(0);
    expect(shown.credits).toEqual({
      balance: 1_000_000,
      balance_usdc: "1",
      ledger_balance: 1_000_000,
      open_leases: [{ id: "lease-cli-1", amount: held, used: 0, held }],
    });
  });
});
