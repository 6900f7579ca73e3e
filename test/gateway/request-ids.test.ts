import { freePort, type Mesh, meshAdmin } from "@tollgate/local";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { devnet, sharedSettlementEnv } from "../support/devnet.ts";
import { eventually } from "../support/eventually.ts";
import { assertConforms } from "../support/openapi.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { countedToday } from "../support/quota.ts";

// The request id is the mesh's own, generated per request: refunds, usage events and
// every other once-only key use it. A caller's X-Request-Id (clients retry 502/503 with the
// same one) is written to the access log for correlation and used for nothing else.
//
// Its own mesh: ethereum is the shared devnet's node; sepolia's only upstream is a closed
// port, so a sepolia call fails without an answer (503) and its unit is refunded.

let mesh: Mesh;
const gatewayLines: string[] = [];

beforeAll(async () => {
  const ethereum = devnet.chains.ethereum?.rpcUrl;
  if (!ethereum) throw new Error("the shared devnet has no ethereum chain");
  mesh = await startOwnMesh({
    stateDir: inject("mesh").stateDir,
    namespace: `reqids${process.pid}`,
    env: {
      LOG_LEVEL: "warn",
      REDIS_BUDGET_MS: "2000",
      UPSTREAMS_ETHEREUM: ethereum,
      UPSTREAMS_SEPOLIA: `http://127.0.0.1:${await freePort()}`,
    },
    serviceEnv: {
      gateway: { LOG_LEVEL: "info" },
      "payment-verifier": sharedSettlementEnv("spare4"),
    },
    onLine: (service, line) => {
      if (service === "gateway") gatewayLines.push(line);
    },
  });
});

afterAll(async () => {
  await mesh?.stop();
});

/** The account of each key's headers made by account(). */
const accountIds = new WeakMap<object, string>();
/** The account's calls counted today once they are `want` (support/quota.ts), in this mesh. */
const countedOnce = (auth: object, want: number) =>
  countedToday(accountIds.get(auth) ?? "", want, {
    stateDir: mesh.stateDir,
    quotaMeterAddr: `127.0.0.1:${mesh.ports["quota-meter"].main}`,
  });

async function account(plan: { daily?: number; monthly?: number } = {}) {
  const admin = meshAdmin(mesh);
  try {
    const { secret, account: made } = await admin.quickstart(
      `reqids-${Math.random().toString(36).slice(2)}`,
      {
        burst: 100_000,
        ...plan,
      },
    );
    const auth = { Authorization: `Bearer ${secret}` };
    accountIds.set(auth, made.id);
    return auth;
  } finally {
    admin.close();
  }
}

async function call(path: string, headers: Record<string, string>) {
  const res = await request(mesh.gatewayUrl).get(path).set(headers);
  await assertConforms("get", path, res);
  return res;
}

const used = async (auth: Record<string, string>) =>
  Number((await call("/api/chain/chain-id", auth)).headers["x-quota-day-used"]);

describe("request ids are the mesh's, never the caller's", () => {
  it("every answer carries its own mesh id; the caller's id only reaches the access log", async () => {
    const auth = await account();
    const sent = "client-trace-abcdef123456";
    const ids = new Set<string>();
    for (const path of ["/api/chain/chain-id", "/api/chain/chain-id", "/api/chain/nope", "/api/pricing"]) {
      const res = await call(path, { ...auth, "X-Request-Id": sent });
      expect(res.headers["x-request-id"]).not.toBe(sent);
      expect(res.body.meta.request_id).toBe(res.headers["x-request-id"]);
      ids.add(String(res.headers["x-request-id"]));
    }
    expect(ids.size).toBe(4);
    const accessLines = () =>
      gatewayLines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.msg === "request" && ids.has(String(l.request_id)));
    // The access lines may trail the answers on the pipe.
    const access = await eventually(accessLines, (lines) => lines.length >= 4, 10_000, 20);
    expect(access).toHaveLength(4);
    for (const line of access) expect(line.client_request_id).toBe(sent);
  });

  it("failed calls retried with one X-Request-Id are each refunded; another account's same id cancels nothing", async () => {
    const a = await account({ daily: 100, monthly: 1000 });
    const b = await account({ daily: 100, monthly: 1000 });
    const retried = { "X-Request-Id": "retry-with-the-same-id-1" };
    expect(await used(a)).toBe(1);
    expect(await used(b)).toBe(1);
    for (const [auth, times] of [
      [a, 3],
      [b, 1],
    ] as const) {
      for (let i = 0; i < times; i++) {
        const failed = await call("/api/chain/block-number?network=sepolia", { ...auth, ...retried });
        expect(failed.status).toBe(503);
        expect(failed.body.error.code).toBe("upstream_unavailable");
      }
    }
    // Each failed call gave its unit back (refunds are reported in a batch after the responses):
    // only the chain-id call counts.
    expect(await countedOnce(a, 1)).toBe(1);
    expect(await countedOnce(b, 1)).toBe(1);
  });

  it("usage counts every served call, even when the caller sent one X-Request-Id for several", async () => {
    const auth = await account();
    await call("/api/chain/chain-id", auth);
    for (let i = 0; i < 3; i++) {
      expect(
        (await call("/api/chain/chain-id", { ...auth, "X-Request-Id": "same-id-for-all-three" })).status,
      ).toBe(200);
    }
    const requests = await eventually(
      async () => {
        const usage = await call("/api/account/usage?days=1", auth);
        expect(usage.status).toBe(200);
        return Number(usage.body.data.days.at(-1).requests);
      },
      (n) => n >= 4,
      30_000,
      100,
    );
    expect(requests).toBe(4);
  });
});
