// Issue 18, finding 7: no secret reaches the logs. Every service runs as its own process (the way
// deploy/local spawns them) at LOG_LEVEL=debug with a secret in every variable that can hold one:
// passwords and tokens in REDIS_URL and NATS_URL, provider keys in node and facilitator URLs, the
// pepper, the operator and mesh tokens, the facilitator's private key, MPP's challenge secret, its
// channel operator key and a key in its Tempo RPC URL. Every dependency is a closed
// port, so each service logs the warnings that name them; then clients make calls that log more
// (refused and failed calls, a created key). Not one secret may appear in anything they print.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAdminClient } from "@tollgate/cli/clients/quota-admin";
import { createLedgerClient } from "@tollgate/cli/clients/settlement-admin";
import { freePort, type RunningService, type ServiceName, spawnService } from "@tollgate/local";
import {
  checkHealth,
  contracts,
  createClient,
  generateMeshToken,
  meshCallerEnv,
  meshTokenDigest,
} from "@tollgate/platform";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { Challenge, Credential } from "mppx";
import request from "supertest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/postgres.ts";

const secret = (label: string) => `${label}${randomBytes(12).toString("hex")}`;

/** Every secret handed to a service, by what it is. */
const S = {
  redisPassword: secret("redispw"),
  databasePassword: secret("databasepw"),
  natsUser: secret("natsuser"),
  natsPassword: secret("natspw"),
  natsToken: secret("natstoken"),
  nodePassword: secret("nodepw"),
  nodePathKey: secret("nodepathkey"),
  nodeQueryKey: secret("nodequerykey"),
  sepoliaKey: secret("sepoliakey"),
  settlementKey: secret("settlementkey"),
  facilitatorKeyInPath: secret("facpathkey"),
  facilitatorKeyInQuery: secret("facquerykey"),
  facilitatorPrivateKey: `0x${randomBytes(32).toString("hex")}`,
  batchAuthorizerKey: `0x${randomBytes(32).toString("hex")}`,
  mppSecretKey: randomBytes(32).toString("base64"),
  mppServerKey: `0x${randomBytes(32).toString("hex")}`,
  tempoKey: secret("tempokey"),
  pepper: secret("pepper"),
  operatorToken: secret("operator"),
  gatewayToken: generateMeshToken(),
  apiKey: `tg_live_${randomBytes(32).toString("base64url")}`,
  paymentSignature: randomBytes(96).toString("base64"),
};

const lines: string[] = [];
const running: RunningService[] = [];
let outbox: string;
let database: TestDatabase;
let gatewayUrl: string;
const ports: Record<string, number> = {};

const healthy = (port: number) => () => checkHealth(`127.0.0.1:${port}`);
const said = (pattern: RegExp) => () => Promise.resolve(lines.some((l) => pattern.test(l)));

async function start(
  label: string,
  name: ServiceName,
  env: Record<string, string>,
  ready: (port: number) => () => Promise<boolean>,
) {
  const port = await freePort();
  ports[label] = port;
  const service = await spawnService(
    name,
    {
      LOG_LEVEL: "debug",
      BIND_HOST: "127.0.0.1",
      GRPC_PORT: String(port),
      PORT: String(port),
      METRICS_PORT: String(await freePort()),
      OUTBOX_DIR: join(outbox, label),
      [meshCallerEnv("gateway")]: meshTokenDigest(S.gatewayToken),
      ...env,
    },
    (_service, line) => lines.push(`[${label}] ${line}`),
    ready(port),
  );
  running.push(service);
}

beforeAll(async () => {
  outbox = mkdtempSync(join(tmpdir(), "tollgate-secrets-"));
  const closed = async () => `127.0.0.1:${await freePort()}`;
  const [redis, nats, node, sepolia, settlement, facilitator, postgres, tempo] = await Promise.all(
    Array.from({ length: 8 }, closed),
  );
  // MPP on an unreachable Tempo chain whose RPC URL carries a key.
  const mpp = {
    MPP_SECRET_KEY: S.mppSecretKey,
    MPP_SERVER_PRIVATE_KEY: S.mppServerKey,
    MPP_TEMPO_RPC_URL: `http://${tempo}/rpc/${S.tempoKey}`,
  };
  const redisUrl = `redis://default:${S.redisPassword}@${redis}/0`;
  // quota-meter's records on the machine's PostgreSQL (trust auth ignores the password, which is
  // still in the URL for the services to keep out of their logs); the worker's database is closed.
  database = await createTestDatabase("secrets");
  const liveDatabaseUrl = `postgres://postgres:${S.databasePassword}@127.0.0.1:5432/${database.name}`;
  const closedDatabaseUrl = `postgres://tollgate:${S.databasePassword}@${postgres}/tollgate`;
  const payTo = `0x${randomBytes(20).toString("hex")}`;

  await Promise.all([
    start(
      "rpc-proxy",
      "rpc-proxy",
      {
        UPSTREAMS_ETHEREUM: `http://node:${S.nodePassword}@${node}/v3/${S.nodePathKey}?apikey=${S.nodeQueryKey}`,
        UPSTREAMS_SEPOLIA: `http://${sepolia}/${S.sepoliaKey}`,
        UPSTREAM_HEAD_POLL_MS: "200",
      },
      healthy,
    ),
    start(
      "quota-meter",
      "quota-meter",
      {
        REDIS_URL: redisUrl,
        REDIS_STANDIN: "true",
        NATS_URL: `nats://${S.natsUser}:${S.natsPassword}@${nats}`,
        API_KEY_PEPPER: S.pepper,
        OPERATOR_TOKEN: S.operatorToken,
        DATABASE_URL: liveDatabaseUrl,
      },
      healthy,
    ),
    start(
      "settlement-worker",
      "settlement-worker",
      {
        NATS_URL: `nats://${S.natsUser}:${S.natsPassword}@${nats}`,
        OPERATOR_TOKEN: S.operatorToken,
        DATABASE_URL: closedDatabaseUrl,
        DATABASE_WAIT_MS: "500",
        X402_NETWORK: "eip155:84532",
        X402_ASSET: `0x${randomBytes(20).toString("hex")}`,
        X402_PAY_TO: `0x${randomBytes(20).toString("hex")}`,
        X402_SETTLEMENT_RPC_URL: `http://${settlement}/rpc/${S.settlementKey}`,
        // It settles MPP session channels from Redis (closed) with the operator key, and claims
        // x402-batch channels with the receiver-authorizer and facilitator keys.
        REDIS_URL: redisUrl,
        MPP_SERVER_PRIVATE_KEY: S.mppServerKey,
        MPP_TEMPO_RPC_URL: mpp.MPP_TEMPO_RPC_URL,
        X402_BATCH_AUTHORIZER_PRIVATE_KEY: S.batchAuthorizerKey,
        X402_FACILITATOR_PRIVATE_KEY: S.facilitatorPrivateKey,
      },
      healthy,
    ),
    // Self-hosted facilitator on an unreachable settlement chain (its key and RPC URL).
    start(
      "payment-verifier",
      "payment-verifier",
      {
        REDIS_URL: redisUrl,
        REDIS_STANDIN: "true",
        NATS_URL: `nats://${S.natsToken}@${nats}`,
        X402_PAY_TO: payTo,
        X402_BATCH_AUTHORIZER_PRIVATE_KEY: S.batchAuthorizerKey,
        X402_FACILITATOR_PRIVATE_KEY: S.facilitatorPrivateKey,
        X402_SETTLEMENT_RPC_URL: `http://${settlement}/rpc/${S.settlementKey}`,
        ...mpp,
      },
      healthy,
    ),
    // A remote facilitator whose URL carries a key, unreachable too.
    start(
      "payment-verifier (remote facilitator)",
      "payment-verifier",
      {
        REDIS_URL: redisUrl,
        REDIS_STANDIN: "true",
        NATS_URL: `nats://${S.natsToken}@${nats}`,
        X402_PAY_TO: payTo,
        X402_BATCH_AUTHORIZER_PRIVATE_KEY: S.batchAuthorizerKey,
        X402_FACILITATOR_URL: `http://${facilitator}/x402/${S.facilitatorKeyInPath}?key=${S.facilitatorKeyInQuery}`,
        ...mpp,
      },
      healthy,
    ),
    // Several replicas: waits for Redis rather than serve without the shared replay guard.
    start(
      "payment-verifier (waiting for Redis)",
      "payment-verifier",
      {
        REDIS_URL: redisUrl,
        REDIS_STANDIN: "false",
        NATS_URL: `nats://${S.natsToken}@${nats}`,
        X402_PAY_TO: payTo,
        X402_BATCH_AUTHORIZER_PRIVATE_KEY: S.batchAuthorizerKey,
        X402_FACILITATOR_PRIVATE_KEY: S.facilitatorPrivateKey,
        X402_SETTLEMENT_RPC_URL: `http://${settlement}/rpc/${S.settlementKey}`,
        ...mpp,
      },
      () => said(/waiting for it/),
    ),
  ]);
  await start(
    "gateway",
    "gateway",
    {
      MESH_TOKEN: S.gatewayToken,
      RPC_PROXY_ADDR: `127.0.0.1:${ports["rpc-proxy"]}`,
      QUOTA_METER_ADDR: `127.0.0.1:${ports["quota-meter"]}`,
      PAYMENT_VERIFIER_ADDR: `127.0.0.1:${ports["payment-verifier"]}`,
    },
    (port) => () =>
      fetch(`http://127.0.0.1:${port}/health`).then(
        (r) => r.ok,
        () => false,
      ),
  );
  gatewayUrl = `http://127.0.0.1:${ports.gateway}`;
});

/** A well-formed payment from the official client, so verifying it needs the (unreachable) settlement chain. */
async function signedPayment(path: string): Promise<string> {
  const challenge = await request(gatewayUrl).get(path);
  expect(challenge.status).toBe(402);
  const signer = privateKeyToAccount(generatePrivateKey());
  const client = new x402HTTPClient(new x402Client().register("eip155:*", new ExactEvmScheme(signer)));
  const offer = client.getPaymentRequiredResponse((name) => challenge.headers[name.toLowerCase()]);
  const header = client.encodePaymentSignatureHeader(await client.createPaymentPayload(offer));
  return header["PAYMENT-SIGNATURE"] ?? "";
}

/**
 * A well-formed MPP charge credential for the gateway's own challenge (a transfer hash): checking
 * it needs the (unreachable) Tempo chain.
 */
async function mppCredential(path: string): Promise<string> {
  const challenge = await fetch(`${gatewayUrl}${path}`);
  const offer = Challenge.fromResponseList(challenge).find((c) => c.intent === "charge");
  if (!offer) throw new Error("no MPP charge offer in the 402");
  const payer = privateKeyToAccount(generatePrivateKey()).address;
  return Credential.serialize(
    Credential.from({
      challenge: offer,
      payload: { type: "hash", hash: `0x${randomBytes(32).toString("hex")}` },
      source: `did:pkh:eip155:4217:${payer}`,
    }),
  );
}

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  await database?.drop();
  rmSync(outbox, { recursive: true, force: true });
});

describe("secrets never reach the logs (finding 7)", () => {
  it("in anything five services print while their dependencies are down and clients call them", async () => {
    const gateway = request(gatewayUrl);
    // A key the operator creates (the admin API logs the creation), then used and failing upstream.
    const admin = createAdminClient(`127.0.0.1:${ports["quota-meter"]}`, S.operatorToken);
    const { secret: createdKey } = await admin.quickstart("secrets-test");
    admin.close();
    // The ledger's database is closed: the admin API answers UNAVAILABLE and logs why.
    const ledger = createLedgerClient(`127.0.0.1:${ports["settlement-worker"]}`, S.operatorToken);
    await ledger.list({ payer: "0x00000000000000000000000000000000000000aa" }).catch(() => undefined);
    await ledger.reconcile(1, 2).catch(() => undefined);
    ledger.close();
    const payment = await signedPayment("/api/chain/block-number");
    const mppPayment = await mppCredential("/api/chain/block-number");
    const calls = [
      gateway.get("/api/chain/block-number").set("Authorization", `Bearer ${createdKey}`),
      gateway.get("/api/chain/block-number").set("Authorization", `Bearer ${S.apiKey}`),
      gateway.get("/api/account/usage").set("Authorization", `Bearer ${S.apiKey}`),
      gateway.get("/api/chain/block-number"),
      gateway.get("/api/chain/block-number").set("PAYMENT-SIGNATURE", S.paymentSignature),
      gateway.get("/api/chain/block-number").set("PAYMENT-SIGNATURE", payment),
      gateway.get("/api/chain/block-number").set("Authorization", mppPayment),
      gateway.get("/api/pricing"),
    ];
    const statuses = (await Promise.all(calls)).map((r) => r.status);
    // The key is metered but every node is down; the unknown key is refused, a garbage payment
    // too; a real one (x402 or MPP) cannot be checked without its chain.
    expect(statuses).toEqual([503, 401, 401, 402, 402, 503, 503, 200]);

    // Straight to the services: one call with the gateway's token, one with a wrong one.
    for (const token of [S.gatewayToken, generateMeshToken()]) {
      const rpc = createClient(contracts.rpcProxy().RpcProxyService, `127.0.0.1:${ports["rpc-proxy"]}`, {
        service: "rpc-proxy",
        defaultDeadlineMs: 5_000,
        token,
      });
      await rpc
        .call("Execute", { requestId: "r1", operation: "blockNumber", network: "sepolia", paramsJson: "{}" })
        .catch(() => undefined);
      rpc.close();
    }
    // The services' shutdown lines too (the gateway first: it flushes usage to quota-meter).
    for (const service of running.toReversed()) await service.stop();

    const output = lines.join("\n");
    // Each service did log what it could not reach (so the check below has something to check).
    for (const [label, pattern] of [
      ["quota-meter", /Redis is unreachable at redis:\/\/\*\*\*@127\.0\.0\.1:\d+\/…/],
      ["payment-verifier", /Redis is unreachable at redis:\/\/\*\*\*@127\.0\.0\.1:\d+\/…/],
      ["payment-verifier (waiting for Redis)", /waiting for it/],
      ["quota-meter", /NATS is unreachable at nats:\/\/\*\*\*@127\.0\.0\.1:\d+/],
      ["payment-verifier", /NATS is unreachable at nats:\/\/\*\*\*@127\.0\.0\.1:\d+/],
      ["rpc-proxy", /operation failed/],
      ["payment-verifier", /facilitator unavailable/],
      ["payment-verifier (remote facilitator)", /facilitator unreachable/],
      ["rpc-proxy", /refused a gRPC call/],
      ["quota-meter", /postgres:\/\/\*\*\*@127\.0\.0\.1:5432\/….*PostgreSQL schema up to date/],
      ["settlement-worker", /postgres:\/\/\*\*\*@127\.0\.0\.1:\d+\/….*PostgreSQL not migrated yet/],
      ["settlement-worker", /serving before PostgreSQL answered/],
      ["settlement-worker", /Redis is unreachable: MPP session channels/],
    ] as const) {
      expect(
        lines.some((l) => l.startsWith(`[${label}]`) && pattern.test(l)),
        `${label} logs ${pattern}`,
      ).toBe(true);
    }
    for (const [what, value] of Object.entries({ ...S, createdKey, payment, mppPayment })) {
      const forms = new Set([value, encodeURIComponent(value), value.replace(/^0x/, "")]);
      for (const form of forms) expect(output.includes(form), `${what} appears in the logs`).toBe(false);
    }
  });
});
