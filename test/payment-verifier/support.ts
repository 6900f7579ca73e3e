// Shared setup for the payment-verifier suites: a devnet (its settlement chain), the service
// in-process on free ports, a gRPC client, and official x402 clients (@x402/core client +
// @x402/evm exact client scheme) for the devnet's funded payers.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { ENDPOINTS, priceAtomic } from "@tollgate/catalog";
import { type Devnet, startDevnet } from "@tollgate/devnet";
import { contracts, createClient, createLogger, type Logger } from "@tollgate/platform";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { x402Facilitator } from "@x402/core/facilitator";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from "@x402/evm/exact/facilitator";
import { createClient as createRedis } from "redis";
import { createPublicClient, erc20Abi, http, type PublicClient } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type {
  MppConfig,
  PaymentVerifierConfig,
  X402Config,
} from "../../services/payment-verifier/src/config.ts";
import {
  type PaymentVerifierDeps,
  type PaymentVerifierHandle,
  startPaymentVerifier,
} from "../../services/payment-verifier/src/server.ts";
import type { PaymentFacts } from "../../services/payment-verifier/src/stores/reservations.ts";
import { GATEWAY_TOKEN, MESH_CALLERS } from "../support/mesh.ts";
import { facilitatorSigner } from "../support/x402.ts";

export type Address = `0x${string}`;
export type Header = { name: string; value: string };

export const BLOCK_NUMBER = "/api/chain/block-number"; // 0.001
export const CALL = "/api/chain/call"; // 0.005
export const ERC721_TOKENS = "/api/chain/erc721-tokens"; // 0.008

export function uniqueId(prefix: string): string {
  return `${prefix}${randomBytes(4).toString("hex")}`;
}

/** What the core records about a verified payment, for the stores' tests (a fresh request id each). */
export const paymentFacts = (over: Partial<PaymentFacts> = {}): PaymentFacts => ({
  scheme: "exact",
  requestId: uniqueId("req-"),
  endpoint: "/api/chain/call",
  network: "ethereum",
  payer: "0xAbC0000000000000000000000000000000000001",
  amount: "5000",
  asset: "0xusdc",
  paymentNetwork: "eip155:84532",
  credential: "fp-of-the-credentials",
  ...over,
});

export function startSettlementDevnet(): Promise<Devnet> {
  const dir = mkdtempSync(join(tmpdir(), "pv-devnet-"));
  return startDevnet({ stateDir: dir, file: join(dir, "devnet.json") });
}

function account(devnet: Devnet, role: string) {
  const a = devnet.accounts.find((x) => x.role === role);
  if (!a) throw new Error(`no devnet account ${role}`);
  return a;
}

/** The service's configuration for the devnet's settlement chain (what deploy/local passes as env). */
export function devnetConfig(
  devnet: Devnet,
  overrides: Partial<PaymentVerifierConfig> = {},
  x402: Partial<X402Config> = {},
): PaymentVerifierConfig {
  const settlement = devnet.demo.settlement;
  const rpcUrl = devnet.chains.settlement?.rpcUrl ?? "";
  return {
    host: "127.0.0.1",
    grpcPort: 0,
    metricsPort: 0,
    redisUrl: "redis://127.0.0.1:6379",
    redisClusterNodes: [],
    natsUrl: "nats://127.0.0.1:4222",
    redisPrefix: `${uniqueId("test:pv:")}:`,
    redisStandIn: true,
    reservationTtlSeconds: 120,
    answers: { maxBytes: 65_536, ttlSeconds: 60 },
    outboxDir: mkdtempSync(join(tmpdir(), "pv-outbox-")),
    limits: {
      perClient: { perSecond: 50, burst: 100 },
      perPayer: { perSecond: 50, burst: 100 },
      refusalMemorySeconds: 30,
    },
    schemes: ["exact", "x402-batch"],
    x402: {
      network: settlement.network as `${string}:${string}`,
      asset: settlement.usdc.address,
      assetName: settlement.usdc.domain.name,
      assetVersion: settlement.usdc.domain.version,
      assetSymbol: "USDC",
      assetDecimals: settlement.usdc.decimals,
      payTo: settlement.payTo,
      maxTimeoutSeconds: 60,
      facilitator: {
        mode: "local",
        privateKey: account(devnet, "facilitator").privateKey,
        rpcUrl,
        confirmationTimeoutMs: 20_000,
        pollingIntervalMs: 50,
        rpcTimeoutMs: 10_000,
      },
      settlementRpcUrl: rpcUrl,
      lookbackBlocks: 5_000,
      batch: { minDeposit: "1000000", withdrawDelaySeconds: 3_600, authorizerKey: generatePrivateKey() },
      batchRefunds: { minimum: "10000", perPayerPerHour: 6 },
      ...x402,
    },
    mpp: mppConfig(devnet),
    meshCallers: MESH_CALLERS,
    ...overrides,
  };
}

/**
 * MPP on the devnet's Tempo chain, as deploy/local passes it: the server's RPC is the devnet's shim
 * (it seeds each session open for the channel reserve stand-in), the receiver is the devnet payTo,
 * and `serverRole`'s key operates session channels.
 */
function mppConfig(
  devnet: Devnet,
  overrides: Partial<MppConfig> = {},
  serverRole = "facilitator",
): MppConfig {
  const tempo = devnet.chains.tempo;
  if (!tempo) throw new Error("the devnet has no tempo chain");
  return {
    secretKey: randomBytes(32).toString("base64"),
    realm: "tollgate-test",
    rpcUrl: tempo.rpcUrl,
    chainId: tempo.chainId,
    payTo: devnet.demo.tempo.payTo,
    serverKey: account(devnet, serverRole).privateKey,
    feeToken: devnet.demo.tempo.pathUsd.address,
    channelReserve: devnet.demo.tempo.channelReserve.address,
    suggestedDeposit: "0.05",
    settle: { minAmount: 1_000_000n, intervalMs: 3_600_000, tickMs: 1_000 },
    ...overrides,
  };
}

export function quietLogger(): Logger {
  const logger = createLogger("payment-verifier");
  logger.level = process.env.LOG_LEVEL ?? "error";
  return logger;
}

/** payment-verifier's gRPC API as the gateway calls it (with the gateway's mesh token, unless `token` says otherwise). */
export function verifierClient(port: number, token: string | undefined = GATEWAY_TOKEN) {
  return createClient(contracts.paymentVerifier().PaymentVerifierService, `127.0.0.1:${port}`, {
    service: "payment-verifier",
    defaultDeadlineMs: 60_000,
    token,
    // The gateway's calls travel on Exchange streams: so do these.
    exchange: { method: "Exchange" },
  });
}
export type VerifierClient = ReturnType<typeof verifierClient>;

/** A payer paying with the official client libraries. */
export interface Payer {
  address: Address;
  http: x402HTTPClient;
}

export function payer(devnet: Devnet, role: string): Payer {
  return payerWithKey(devnet, account(devnet, role).privateKey);
}

/** A payer signing with `privateKey` (a wallet of the test's own making). */
export function payerWithKey(devnet: Devnet, privateKey: `0x${string}`): Payer {
  const acct = privateKeyToAccount(privateKey);
  const settlement = devnet.demo.settlement;
  const client = new x402Client()
    .register("eip155:*", new ExactEvmScheme(acct))
    // The devnet token is not a library default asset; a client must opt in to it.
    .setSpendControls({
      allowedAssets: [
        { network: settlement.network as `${string}:${string}`, asset: settlement.usdc.address },
        // For the wrong-network case: the same token address offered on Base mainnet.
        { network: "eip155:8453", asset: settlement.usdc.address },
      ],
    });
  return { address: acct.address, http: new x402HTTPClient(client) };
}

export function headerGetter(headers: readonly Header[]) {
  return (name: string) => headers.find((h) => h.name.toLowerCase() === name.toLowerCase())?.value;
}

export async function challenge(client: VerifierClient, endpoint: string, requestId = uniqueId("req-")) {
  const res = await client.call("Challenge", {
    requestId,
    resource: { endpoint, network: "ethereum", url: `http://127.0.0.1/x${endpoint}` },
  });
  return res.headers ?? [];
}

/** PaymentRequired as the official client reads it from the 402's headers. */
async function paymentRequired(client: VerifierClient, p: Payer, endpoint: string): Promise<PaymentRequired> {
  return p.http.getPaymentRequiredResponse(headerGetter(await challenge(client, endpoint)));
}

/** The official client pays for `endpoint` (optionally with a tampered offer); returns the request headers. */
export async function pay(
  client: VerifierClient,
  p: Payer,
  endpoint: string,
  tamper?: (pr: PaymentRequired) => void,
): Promise<{ payload: PaymentPayload; credentials: Header[] }> {
  const pr = await paymentRequired(client, p, endpoint);
  tamper?.(pr);
  const payload = await p.http.createPaymentPayload(pr);
  const headers = p.http.encodePaymentSignatureHeader(payload);
  return { payload, credentials: Object.entries(headers).map(([name, value]) => ({ name, value })) };
}

export function resource(endpoint: string) {
  return { endpoint, network: "ethereum", url: `http://127.0.0.1/x${endpoint}` };
}

export async function verify(
  client: VerifierClient,
  endpoint: string,
  credentials: Header[],
  requestId = uniqueId("req-"),
) {
  const res = await client.call("Verify", { requestId, resource: resource(endpoint), credentials });
  return { ...res, requestId };
}

export async function settle(
  client: VerifierClient,
  endpoint: string,
  credentials: Header[],
  paymentId: string,
  requestId: string,
) {
  return client.call("Settle", { requestId, paymentId, resource: resource(endpoint), credentials });
}

export function settlementReader(devnet: Devnet): PublicClient {
  return createPublicClient({ transport: http(devnet.chains.settlement?.rpcUrl) });
}

export async function usdcBalance(chain: PublicClient, devnet: Devnet, who: Address): Promise<bigint> {
  return chain.readContract({
    address: devnet.demo.settlement.usdc.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [who],
  });
}

/** The catalog price of `endpoint`, in USDC atomic units. */
export function priceOf(endpoint: string): bigint {
  const e = ENDPOINTS.find((x) => x.path === endpoint);
  if (!e) throw new Error(`no endpoint ${endpoint}`);
  return priceAtomic(e.price);
}

export async function startVerifier(
  config: PaymentVerifierConfig,
  deps: PaymentVerifierDeps = {},
): Promise<{ handle: PaymentVerifierHandle; client: VerifierClient }> {
  const handle = await startPaymentVerifier(config, { logger: quietLogger(), ...deps });
  return { handle, client: verifierClient(handle.grpcPort) };
}

/** Removes what a suite left behind: its Redis keys, its namespaced JetStream streams, outbox dirs. */
export async function cleanUp(opts: { redisPrefixes: string[]; namespace: string; outboxDirs: string[] }) {
  const redis = createRedis({ url: "redis://127.0.0.1:6379" });
  await redis.connect();
  for (const prefix of opts.redisPrefixes) {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(keys);
  }
  await redis.close();
  const nc = await connect({ servers: "nats://127.0.0.1:4222" });
  const jsm = await jetstreamManager(nc);
  const suffix = `_${opts.namespace.toUpperCase()}`;
  for await (const stream of jsm.streams.list()) {
    if (stream.config.name.endsWith(suffix)) await jsm.streams.delete(stream.config.name);
  }
  await nc.close();
  for (const dir of opts.outboxDirs) rmSync(dir, { recursive: true, force: true });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString("utf8");
    });
    req.on("end", () => resolve(body));
    req.on("error", reject);
  });
}

/** Listens on a free loopback port; the returned close() is idempotent. */
export async function listen(server: Server): Promise<{ port: number; close: () => Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve())),
  };
}

/**
 * The official x402Facilitator (exact EVM scheme, settling with the devnet account `role`) served
 * over the standard facilitator HTTP API: GET /supported, POST /verify, POST /settle. Every request
 * is recorded in `calls` ("POST /verify"), so a test can tell what reached the facilitator.
 */
export function facilitatorHandler(devnet: Devnet, calls: string[], role = "spare4") {
  const network = devnet.demo.settlement.network as `${string}:${string}`;
  const facilitator = new x402Facilitator().register(
    network,
    new ExactEvmFacilitatorScheme(facilitatorSigner(devnet, role)),
  );
  return async (req: IncomingMessage, res: ServerResponse) => {
    calls.push(`${req.method} ${req.url}`);
    const reply = (body: unknown) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.method === "GET" && req.url === "/supported") return reply(facilitator.getSupported());
    const { paymentPayload, paymentRequirements } = JSON.parse(await readBody(req));
    if (req.url === "/verify") return reply(await facilitator.verify(paymentPayload, paymentRequirements));
    if (req.url === "/settle") return reply(await facilitator.settle(paymentPayload, paymentRequirements));
    res.writeHead(404).end();
  };
}
