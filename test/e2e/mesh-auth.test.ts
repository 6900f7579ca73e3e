// Issue 18, finding 5: whoever reaches a service's gRPC port must not be able to use it. Its own
// mesh (the embedded default's wiring), whose upstreams are counting proxies in front of the
// shared devnet's nodes. An attacker calls each service directly with no mesh token, a wrong
// one, or another caller's (a dashboard's, which quota-meter accepts for GetUsage only): every
// call is refused before its handler runs and changes nothing, while the same call with the
// gateway's token does what the token guards, and the gateway serves as before.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Mesh, meshAdmin } from "@tollgate/local";
import {
  CallError,
  checkHealth,
  contracts,
  createClient,
  generateMeshToken,
  grpc,
  meshCallerEnv,
  meshTokenDigest,
} from "@tollgate/platform";
import { upstreamsEnvName } from "@tollgate/rpc-proxy";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metric } from "../quota-meter/helpers.ts";
import { CountingProxy } from "../support/counting-proxy.ts";
import { CHAIN_NETWORKS, devnet, sharedSettlementEnv } from "../support/devnet.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import { SUITE_BURST } from "../support/quota.ts";
import { x402Payer } from "../support/x402.ts";

const proxies = new Map<string, CountingProxy>();
let mesh: Mesh;
let stateDir: string;
let gatewayToken: string;
let apiKey: string;
let accountId: string;
let keyId: string;
const dashboardToken = generateMeshToken();

/** What an attacker may present: nothing, a guess, or a token that is real but not for this. */
const ATTACKERS = [
  { who: "no token", token: undefined },
  { who: "a wrong token", token: generateMeshToken() },
  { who: "the dashboard's token", token: dashboardToken },
] as const;

beforeAll(async () => {
  const env: Record<string, string> = { LOG_LEVEL: "warn", REDIS_BUDGET_MS: "2000" };
  for (const network of CHAIN_NETWORKS) {
    const target = devnet.chains[network]?.rpcUrl;
    if (!target) throw new Error(`the devnet has no ${network} chain`);
    const proxy = await new CountingProxy(target).listen();
    proxies.set(network, proxy);
    env[upstreamsEnvName(network)] = proxy.url();
  }
  stateDir = mkdtempSync(join(tmpdir(), "tollgate-mesh-auth-"));
  mesh = await startOwnMesh({
    stateDir,
    namespace: `meshauth${process.pid}`,
    env,
    serviceEnv: {
      // No background head polls: every request at the proxy is a call's.
      "rpc-proxy": { UPSTREAM_HEAD_POLL_MS: "600000" },
      "quota-meter": { [meshCallerEnv("dashboard")]: meshTokenDigest(dashboardToken) },
      "payment-verifier": sharedSettlementEnv("spare3"),
      // The suite reads the windows through the gateway's X-Quota-* after calling quota-meter
      // directly: without leases, every gateway call shows the windows as they are.
      gateway: { LEASE_MAX_UNITS: "1" },
    },
  });
  gatewayToken = readFileSync(mesh.gatewayTokenFile, "utf8").trim();
  const admin = meshAdmin(mesh);
  try {
    const created = await admin.quickstart("mesh-auth", { burst: SUITE_BURST });
    apiKey = created.secret;
    accountId = created.account.id;
    keyId = created.key.id;
  } finally {
    admin.close();
  }
});

afterAll(async () => {
  await mesh?.stop();
  await Promise.all([...proxies.values()].map((p) => p.close()));
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

const addr = (service: keyof Mesh["ports"]) => `127.0.0.1:${mesh.ports[service].main}`;
const metricOf = (service: keyof Mesh["ports"], name: string, labels: Record<string, string> = {}) =>
  metric(mesh.ports[service].metrics, name, labels);

function quotaMeter(token: string | undefined) {
  return createClient(contracts.quotaMeter().QuotaMeterService, addr("quota-meter"), {
    service: "quota-meter",
    defaultDeadlineMs: 10_000,
    token,
  });
}
function paymentVerifier(token: string | undefined) {
  return createClient(contracts.paymentVerifier().PaymentVerifierService, addr("payment-verifier"), {
    service: "payment-verifier",
    defaultDeadlineMs: 30_000,
    token,
  });
}
function rpcProxy(token: string | undefined) {
  return createClient(contracts.rpcProxy().RpcProxyService, addr("rpc-proxy"), {
    service: "rpc-proxy",
    defaultDeadlineMs: 10_000,
    token,
  });
}

/** The gRPC status a refused call ended with. */
async function refusal(call: Promise<unknown>): Promise<grpc.status> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof CallError)) throw new Error(`the call was not refused: ${String(err)}`);
  return err.failure.grpcCode;
}

/** What a token that is not the gateway's gets: unknown tokens are unauthenticated, a known caller out of its lane is denied. */
function expectedRefusal(token: string | undefined, acceptedHere: string[]): grpc.status {
  return token && acceptedHere.includes(token) ? grpc.status.PERMISSION_DENIED : grpc.status.UNAUTHENTICATED;
}

/** Today's count of the key's account, as the gateway reports it on a metered call (the call itself included). */
async function dayUsed(): Promise<number> {
  const res = await request(mesh.gatewayUrl)
    .get("/api/chain/chain-id")
    .set("Authorization", `Bearer ${apiKey}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return Number(res.headers["x-quota-day-used"]);
}

describe("internal gRPC refuses callers without the token for the method (finding 5)", () => {
  it("quota-meter Authorize with a stolen key: refused, nothing counted; with the gateway's token it counts", async () => {
    const before = await dayUsed();
    const authorizations = () => metricOf("quota-meter", "quota_authorize_total");
    const decisions = await authorizations();
    for (const { who, token } of ATTACKERS) {
      const client = quotaMeter(token);
      const code = await refusal(
        client.call("Authorize", {
          requestId: `attack-${who}`,
          apiKey,
          endpoint: "/api/chain/block-number",
          network: "ethereum",
        }),
      );
      client.close();
      expect(code, who).toBe(expectedRefusal(token, [dashboardToken]));
    }
    // No handler ran: no decision was taken, no unit counted.
    expect(await authorizations()).toBe(decisions);
    expect(await dayUsed()).toBe(before + 1);

    const gateway = quotaMeter(gatewayToken);
    const allowed = await gateway.call("Authorize", {
      requestId: "as-the-gateway",
      apiKey,
      endpoint: "/api/chain/block-number",
      network: "ethereum",
    });
    gateway.close();
    expect(allowed.decision).toBe("DECISION_ALLOW");
    expect(await dayUsed()).toBe(before + 3);
  });

  it("quota-meter ReportUsage refunds with fresh ids: refused, the windows keep their count; the gateway's refunds apply", async () => {
    const refund = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        requestId: `refund-${generateMeshToken().slice(0, 12)}-${i}`,
        accountId,
        keyId,
        endpoint: "/api/chain/block-number",
        network: "ethereum",
        status: 502,
        latencyMs: 1,
        time: new Date().toISOString(),
        refund: true,
      }));
    const before = await dayUsed();
    for (const { who, token } of ATTACKERS) {
      const client = quotaMeter(token);
      const code = await refusal(client.call("ReportUsage", { records: refund(5) }));
      client.close();
      expect(code, who).toBe(expectedRefusal(token, [dashboardToken]));
    }
    expect(await dayUsed()).toBe(before + 1);

    const gateway = quotaMeter(gatewayToken);
    await gateway.call("ReportUsage", { records: refund(3) });
    gateway.close();
    // The reading after the attacks (+1), three units given back (−3), this reading (+1).
    expect(await dayUsed()).toBe(before + 1 - 3 + 1);
  });

  it("quota-meter lets the dashboard read a user's usage (GetUsage), the one method its policy grants", async () => {
    const dashboard = quotaMeter(dashboardToken);
    const usage = await dashboard.call("GetUsage", { apiKey, days: 1 });
    dashboard.close();
    expect(usage.accountId).toBe(accountId);
  });

  it("payment-verifier Verify and Release: refused, the payment stays unused, the gateway then serves it", async () => {
    const payer = x402Payer(devnet, "payer7");
    const path = "/api/chain/block-number?network=ethereum";
    const challenge = await request(mesh.gatewayUrl).get(path);
    expect(challenge.status).toBe(402);
    const offer = payer.http.getPaymentRequiredResponse((name) => challenge.headers[name.toLowerCase()]);
    const payload = await payer.http.createPaymentPayload(offer);
    const signature = payer.http.encodePaymentSignatureHeader(payload)["PAYMENT-SIGNATURE"] ?? "";
    const resource = {
      endpoint: "/api/chain/block-number",
      network: "ethereum",
      url: `${mesh.gatewayUrl}${path}`,
    };
    const credentials = [{ name: "PAYMENT-SIGNATURE", value: signature }];

    const verifies = () => metricOf("payment-verifier", "payment_verify_seconds_count");
    const releases = () => metricOf("payment-verifier", "payment_releases_total");
    const [verified, released] = [await verifies(), await releases()];
    for (const { who, token } of ATTACKERS) {
      const client = paymentVerifier(token);
      // The dashboard is no caller of payment-verifier: its token is as unknown there as a guess.
      expect(
        await refusal(client.call("Verify", { requestId: `attack-${who}`, resource, credentials })),
        who,
      ).toBe(grpc.status.UNAUTHENTICATED);
      expect(
        await refusal(client.call("Release", { requestId: "", paymentId: "pay_anything", reason: "attack" })),
        who,
      ).toBe(grpc.status.UNAUTHENTICATED);
      client.close();
    }
    expect(await verifies()).toBe(verified);
    expect(await releases()).toBe(released);

    // The attacker's Verify reserved nothing: the payment still buys exactly one call.
    const served = await request(mesh.gatewayUrl).get(path).set("PAYMENT-SIGNATURE", signature);
    expect(served.status, JSON.stringify(served.body)).toBe(200);
    expect(served.headers["payment-response"]).toBeDefined();
    expect(await verifies()).toBe(verified + 1);
  });

  it("rpc-proxy Execute: refused, and no request reaches the node; the gateway's token reaches it once", async () => {
    const proxy = proxies.get("ethereum")!;
    const operations = () => metricOf("rpc-proxy", "rpc_proxy_operations_total");
    const [mark, ran] = [proxy.requests.length, await operations()];
    const execute = { requestId: "attack", operation: "blockNumber", network: "ethereum", paramsJson: "{}" };
    for (const { who, token } of ATTACKERS) {
      const client = rpcProxy(token);
      expect(await refusal(client.call("Execute", execute)), who).toBe(grpc.status.UNAUTHENTICATED);
      client.close();
    }
    expect(proxy.since(mark)).toEqual([]);
    expect(await operations()).toBe(ran);

    const gateway = rpcProxy(gatewayToken);
    const res = await gateway.call("Execute", execute);
    gateway.close();
    expect(JSON.parse(res.dataJson).block_number).toMatch(/^0x/);
    expect(proxy.since(mark).map((r) => r.methods)).toEqual([["eth_blockNumber"]]);
  });

  it("counts every refusal by reason, and keeps the standard health service open for probes", async () => {
    const refused = (service: keyof Mesh["ports"], reason: string) =>
      metricOf(service, "grpc_server_refused_total", { reason });
    // Three attackers per test above: none, a guess, the dashboard's token.
    expect(await refused("quota-meter", "missing_token")).toBe(2);
    expect(await refused("quota-meter", "unknown_token")).toBe(2);
    expect(await refused("quota-meter", "not_allowed")).toBe(2);
    expect(await refused("payment-verifier", "missing_token")).toBe(2);
    expect(await refused("payment-verifier", "unknown_token")).toBe(4);
    expect(await refused("rpc-proxy", "missing_token")).toBe(1);
    expect(await refused("rpc-proxy", "unknown_token")).toBe(2);
    for (const service of ["quota-meter", "payment-verifier", "rpc-proxy"] as const) {
      expect(await checkHealth(addr(service)), service).toBe(true);
    }
  });
});
