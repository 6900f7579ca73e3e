// Issue 34: a first dashboard sign-in (ResolveWalletAccount) makes an account on the free plan the
// operator configured, never on the standard plan the operator's CLI gives; the plan is the account's
// record, in PostgreSQL and in the Redis hot copy (and back after a re-seed); DescribePlans states both
// plans' figures, the one source the gateway and the dashboard show.
import { randomBytes } from "node:crypto";
import { contracts, createClient, grpc, meshTokenDigest } from "@tollgate/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DASHBOARD_TOKEN } from "../dashboard/support.ts";
import { MESH_CALLERS } from "../support/mesh.ts";
import { cleanRedis, redis, startTestMeter, type TestMeter, waitFor } from "./helpers.ts";

const FREE = { dailyLimit: 7, monthlyLimit: 70, burstPerSecond: 3 };
let qm: TestMeter;
let accounts: ReturnType<typeof accountClient>;

function accountClient(addr: string) {
  const client = createClient(contracts.quotaMeter().AccountService, addr, {
    service: "quota-meter",
    defaultDeadlineMs: 5_000,
    token: DASHBOARD_TOKEN,
  });
  return {
    firstSignIn: async () => {
      const address = `0x${randomBytes(20).toString("hex")}`;
      const { account } = await client.call("ResolveWalletAccount", { address, create: true });
      if (!account) throw new Error("no account");
      return account;
    },
    createKey: (accountId: string) => client.call("CreateOwnKey", { accountId }),
    close: () => client.close(),
  };
}

beforeAll(async () => {
  qm = await startTestMeter({
    meshCallers: { ...MESH_CALLERS, dashboard: [meshTokenDigest(DASHBOARD_TOKEN)] },
    freePlan: FREE,
  });
  accounts = accountClient(`127.0.0.1:${qm.handle.grpcPort}`);
});

afterAll(async () => {
  accounts?.close();
  await qm?.stop();
});

describe("plans", () => {
  it("a first sign-in's account joins the free plan as configured; the operator's keep the standard plan", async () => {
    const free = await accounts.firstSignIn();
    expect(free).toMatchObject({ plan: "free", dailyLimit: 7, monthlyLimit: 70, burstPerSecond: 3 });
    const { secret } = await accounts.createKey(free.id);
    const call = await qm.meter.authorize(secret);
    expect(call.quota).toMatchObject({ dayLimit: 7, monthLimit: 70 });

    const operators = await qm.admin.account();
    expect(operators).toMatchObject({
      plan: "standard",
      dailyLimit: qm.config.defaultDailyLimit,
      monthlyLimit: qm.config.defaultMonthlyLimit,
      burstPerSecond: 0,
    });
  });

  it("DescribePlans states both plans as enforced, to the gateway and the dashboard", async () => {
    const expected = {
      standard: {
        name: "standard",
        dailyLimit: qm.config.defaultDailyLimit,
        monthlyLimit: qm.config.defaultMonthlyLimit,
        burstPerSecond: qm.config.defaultBurstPerSecond,
      },
      free: { name: "free", ...FREE },
    };
    expect(await qm.meter.raw.call("DescribePlans", {})).toEqual(expected);
    const asDashboard = createClient(
      contracts.quotaMeter().QuotaMeterService,
      `127.0.0.1:${qm.handle.grpcPort}`,
      { service: "quota-meter", defaultDeadlineMs: 5_000, token: DASHBOARD_TOKEN },
    );
    try {
      expect(await asDashboard.call("DescribePlans", {})).toEqual(expected);
    } finally {
      asDashboard.close();
    }
  });

  it("the operator moves an account between plans; an unknown plan is refused naming the field", async () => {
    const account = await accounts.firstSignIn();
    const { secret } = await accounts.createKey(account.id);
    const moved = await qm.admin.raw.updateAccount({ accountId: account.id, plan: "standard" });
    expect(moved.account).toMatchObject({
      plan: "standard",
      dailyLimit: qm.config.defaultDailyLimit,
      burstPerSecond: 0,
    });
    expect((await qm.meter.authorize(secret)).quota).toMatchObject({ dayLimit: qm.config.defaultDailyLimit });
    await expect(qm.admin.raw.updateAccount({ accountId: account.id, plan: "gold" })).rejects.toMatchObject({
      failure: { grpcCode: grpc.status.INVALID_ARGUMENT, message: "plan: expected standard or free" },
    });
    await expect(qm.admin.raw.createAccount({ name: "x", plan: "gold" })).rejects.toMatchObject({
      failure: { grpcCode: grpc.status.INVALID_ARGUMENT },
    });
  });

  it("the Redis hot copy carries the plan, and a re-seed of a lost copy brings it back", async () => {
    const account = await accounts.firstSignIn();
    const { secret } = await accounts.createKey(account.id);
    const r = await redis();
    try {
      const hot = `${qm.config.redisPrefix}acct:${account.id}`;
      expect(await r.hGet(hot, "plan")).toBe("free");
      // Lost: every key of this quota-meter's prefix, its seed mark included.
      await cleanRedis(qm.config.redisPrefix);
      expect(await r.exists(hot)).toBe(0);
      // The seed mark is written last: once it is back, so is every account.
      await waitFor(async () => (await r.get(`${qm.config.redisPrefix}seeded`)) !== null, 10_000, 50);
      expect(await r.hGet(hot, "plan")).toBe("free");
    } finally {
      await r.close();
    }
    expect((await qm.meter.authorize(secret)).quota).toMatchObject({ dayLimit: 7, monthLimit: 70 });
  });
});
