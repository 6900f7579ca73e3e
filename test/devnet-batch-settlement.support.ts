// The fixture of the x402 `batch-settlement` suites (devnet-batch-settlement*.test.ts): a devnet
// with our escrow and collector at the SDK's canonical addresses, Redis channel storage shared by
// two payment-verifier replicas (scheme instances), and a resource server wired in the official
// middleware order. Each suite file calls `useBatchDevnet()` in its describe: one devnet per file.
import { rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BATCH_SETTLEMENT_ADDRESS, DEFAULT_STATE_DIR, type Devnet, startDevnet } from "@tollgate/devnet";
import { loadArtifacts } from "@tollgate/devnet/compile";
import {
  decodePaymentRequiredHeader,
  encodePaymentSignatureHeader,
  type HTTPRequestContext,
  x402HTTPResourceServer,
} from "@x402/core/http";
import { x402ResourceServer } from "@x402/core/server";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { BatchSettlementEvmScheme as BatchServerScheme } from "@x402/evm/batch-settlement/server";
import { RedisChannelStorage } from "@x402/evm/batch-settlement/server/redis-storage";
import { createClient } from "redis";
import {
  type Abi,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  type Hex,
  http,
  type PublicClient,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect } from "vitest";
import { uniqueId } from "./payment-verifier/support.ts";
import { usdcBalance } from "./support/x402.ts";
import { batchFacilitator, type InProcessFacilitator } from "./support/x402-batch.ts";

export const SCHEME = "batch-settlement";
export const PRICE = 1_000n; // 0.001 USDC per call
export const DEPOSIT = 100_000n; // the /paid routes' announced minDeposit: 0.1 USDC, 100 calls
export const EXPENSIVE = 200_000n; // more than a whole deposit
export const WITHDRAW_DELAY = 900;

export const ERR = {
  mismatch: "invalid_batch_settlement_evm_cumulative_amount_mismatch",
  exceedsBalance: "invalid_batch_settlement_evm_cumulative_exceeds_balance",
  belowClaimed: "invalid_batch_settlement_evm_cumulative_below_claimed",
  busy: "invalid_batch_settlement_evm_channel_busy",
};

/** The revert's custom error name (or reason), or "no revert". */
async function revertOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
  } catch (err) {
    const reverted = err instanceof BaseError && err.walk((e) => e instanceof ContractFunctionRevertedError);
    if (reverted instanceof ContractFunctionRevertedError)
      return reverted.data?.errorName ?? reverted.reason ?? "";
    throw err;
  }
  return "no revert";
}

export let devnet: Devnet;
export let chain: PublicClient;
export let abi: Abi;
export let collectorAbi: Abi;
let redis: ReturnType<typeof createClient>;
export let facilitator: InProcessFacilitator;
let server: Server;
export let base: string;
const file = join(tmpdir(), `tollgate-devnet-batch-${process.pid}.json`);
// Per file (set in useBatchDevnet): the files of a worker share this module, not its state.
let keyPrefix = uniqueId("test:x402-batch:");
export const authorizer = privateKeyToAccount(generatePrivateKey());
/** Responses the resource handler delivered (status 200), per path. */
export const delivered = new Map<string, number>();

/** One payment-verifier replica: its own scheme instance over the shared Redis channel storage. */
export interface Replica {
  scheme: BatchServerScheme;
  server: x402ResourceServer;
}
export let A: Replica;
export let B: Replica;
let storage: RedisChannelStorage;

export const network = () => devnet.demo.settlement.network as `${string}:${string}`;
export const usdc = () => devnet.demo.settlement.usdc;
export const payTo = () => devnet.demo.settlement.payTo;
export const balanceOf = (owner: `0x${string}`) => usdcBalance(chain, devnet, owner);
export const read = <T>(functionName: string, args: unknown[]) =>
  chain.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi, functionName, args }) as Promise<T>;
export const channelOnChain = (id: Hex) => read<readonly [bigint, bigint]>("channels", [id]);
export const record = (id: Hex) => storage.get(id);
/** How a call would end (simulated): its custom error's name, or "no revert". */
export const outcome = (
  functionName: string,
  args: unknown[],
  { from = facilitator.address, to = BATCH_SETTLEMENT_ADDRESS, contractAbi = abi } = {},
) => revertOf(chain.simulateContract({ account: from, address: to, abi: contractAbi, functionName, args }));

const offer = (amount: bigint, extra: Record<string, unknown> = { minDeposit: String(DEPOSIT) }) => ({
  scheme: SCHEME,
  network: network(),
  payTo: payTo(),
  price: {
    amount: String(amount),
    asset: usdc().address,
    extra: { name: usdc().domain.name, version: usdc().domain.version },
  },
  maxTimeoutSeconds: 60,
  extra,
});

/** The 402 a request without payment gets. */
export async function probe(path: string): Promise<PaymentRequired> {
  const res = await fetch(`${base}${path}`);
  expect(res.status).toBe(402);
  return decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
}

/** Sends a hand-made PAYMENT-SIGNATURE; returns the status and the 402's decoded header. */
export async function pay(path: string, payload: PaymentPayload) {
  const res = await fetch(`${base}${path}`, {
    headers: { "PAYMENT-SIGNATURE": encodePaymentSignatureHeader(payload) },
  });
  const required = res.headers.get("payment-required");
  return {
    status: res.status,
    settled: res.headers.get("payment-response"),
    required: required ? decodePaymentRequiredHeader(required) : undefined,
  };
}

/** The official middleware order: verify, handler, settle only after the handler succeeded. */
function serve(http402: x402HTTPResourceServer) {
  return async (req: IncomingMessage, res: ServerResponse) => {
    const send = (status: number, headers: Record<string, string>, body: unknown) => {
      res.writeHead(status, { "Content-Type": "application/json", ...headers });
      res.end(JSON.stringify(body ?? {}));
    };
    try {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      const header = (name: string) => {
        const value = req.headers[name.toLowerCase()];
        return Array.isArray(value) ? value[0] : value;
      };
      const context: HTTPRequestContext = {
        adapter: {
          getHeader: header,
          getMethod: () => req.method ?? "GET",
          getPath: () => url.pathname,
          getUrl: () => url.href,
          getAcceptHeader: () => header("accept") ?? "",
          getUserAgent: () => header("user-agent") ?? "",
        },
        path: url.pathname,
        method: req.method ?? "GET",
      };
      const result = await http402.processHTTPRequest(context);
      if (result.type === "no-payment-required") return send(404, {}, { error: "no such route" });
      if (result.type === "payment-error") {
        return send(result.response.status, result.response.headers, result.response.body);
      }
      if (url.pathname === "/fails") {
        // The upstream failed: release the reservation, charge nothing.
        await result.cancellationDispatcher.cancel({ reason: "handler_failed", responseStatus: 502 });
        return send(502, {}, { error: "upstream failed" });
      }
      const settled = await http402.processSettlement(
        result.paymentPayload,
        result.paymentRequirements,
        result.declaredExtensions,
        { request: context },
      );
      if (!settled.success)
        return send(settled.response.status, settled.response.headers, settled.response.body);
      delivered.set(url.pathname, (delivered.get(url.pathname) ?? 0) + 1);
      return send(200, settled.headers, { path: url.pathname });
    } catch (err) {
      send(500, {}, { error: (err as Error).message });
    }
  };
}

/** Starts the devnet, the replicas and the resource server before the describe's tests; stops them after. */
export function useBatchDevnet() {
  beforeAll(async () => {
    keyPrefix = uniqueId("test:x402-batch:");
    delivered.clear();
    devnet = await startDevnet({ file });
    chain = createPublicClient({ transport: http(devnet.chains.settlement?.rpcUrl, { retryCount: 0 }) });
    const { artifacts } = await loadArtifacts(DEFAULT_STATE_DIR);
    abi = artifacts.BatchSettlement.abi;
    collectorAbi = artifacts.ERC3009DepositCollector.abi;
    redis = createClient({ url: "redis://127.0.0.1:6379" });
    await redis.connect();
    storage = new RedisChannelStorage({ client: redis as never, keyPrefix });
    facilitator = batchFacilitator(devnet);
    const replica = (): Replica => {
      const scheme = new BatchServerScheme(payTo(), {
        storage,
        receiverAuthorizerSigner: authorizer,
        withdrawDelay: WITHDRAW_DELAY,
      });
      return { scheme, server: new x402ResourceServer(facilitator).register(network(), scheme) };
    };
    A = replica();
    B = replica();
    const http402 = new x402HTTPResourceServer(A.server, {
      "GET /paid": { accepts: offer(PRICE) },
      "GET /fails": { accepts: offer(PRICE) },
      "GET /expensive": { accepts: offer(EXPENSIVE) },
      "GET /default-deposit": { accepts: offer(PRICE, {}) },
    });
    await http402.initialize();
    await B.server.initialize();
    server = createServer(serve(http402));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 120_000);

  afterAll(async () => {
    await new Promise<void>((resolve) => (server?.listening ? server.close(() => resolve()) : resolve()));
    if (redis?.isOpen) {
      for await (const keys of redis.scanIterator({ MATCH: `${keyPrefix}*`, COUNT: 1000 })) {
        if (keys.length > 0) await redis.del(keys);
      }
      await redis.close();
    }
    await devnet?.stop();
    rmSync(file, { force: true });
  });
}
