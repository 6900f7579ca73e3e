// The x402 `batch-settlement` scheme end to end with nothing but the official SDK (@x402/evm
// 2.27.0 client, server scheme with RedisChannelStorage, in-process facilitator) against a devnet:
// no Tollgate service is involved. The escrow and collector are our own contracts with the
// published interface, standing in for the canonical deployment at the canonical addresses.

import { rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  BATCH_SETTLEMENT_ADDRESS,
  DEFAULT_STATE_DIR,
  type Devnet,
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  startDevnet,
} from "@tollgate/devnet";
import { loadArtifacts } from "@tollgate/devnet/compile";
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentResponseHeader,
  encodePaymentSignatureHeader,
  type HTTPRequestContext,
  x402HTTPResourceServer,
} from "@x402/core/http";
import { x402ResourceServer } from "@x402/core/server";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import * as sdk from "@x402/evm";
import { computeChannelId, signVoucher } from "@x402/evm/batch-settlement/client";
import {
  BatchSettlementEvmScheme as BatchServerScheme,
  type Channel,
} from "@x402/evm/batch-settlement/server";
import { RedisChannelStorage } from "@x402/evm/batch-settlement/server/redis-storage";
import { createClient } from "redis";
import {
  type Abi,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  type Hex,
  hashTypedData,
  http,
  type PublicClient,
  parseEventLogs,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueId } from "./payment-verifier/support.ts";
import { usdcBalance } from "./support/x402.ts";
import { batchFacilitator, batchPayer, type InProcessFacilitator } from "./support/x402-batch.ts";

const SCHEME = "batch-settlement";
const PRICE = 1_000n; // 0.001 USDC per call
const DEPOSIT = 100_000n; // the /paid routes' announced minDeposit: 0.1 USDC, 100 calls
const EXPENSIVE = 200_000n; // more than a whole deposit
const WITHDRAW_DELAY = 900;

const ERR = {
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

describe("x402 batch-settlement with the official SDK on the devnet (our own contracts stand in for the canonical deployment)", () => {
  let devnet: Devnet;
  let chain: PublicClient;
  let abi: Abi;
  let collectorAbi: Abi;
  let redis: ReturnType<typeof createClient>;
  let facilitator: InProcessFacilitator;
  let server: Server;
  let base: string;
  const file = join(tmpdir(), `tollgate-devnet-batch-${process.pid}.json`);
  const keyPrefix = uniqueId("test:x402-batch:");
  const authorizer = privateKeyToAccount(generatePrivateKey());
  /** Responses the resource handler delivered (status 200), per path. */
  const delivered = new Map<string, number>();

  /** One payment-verifier replica: its own scheme instance over the shared Redis channel storage. */
  interface Replica {
    scheme: BatchServerScheme;
    server: x402ResourceServer;
  }
  let A: Replica;
  let B: Replica;
  let storage: RedisChannelStorage;

  const network = () => devnet.demo.settlement.network as `${string}:${string}`;
  const usdc = () => devnet.demo.settlement.usdc;
  const payTo = () => devnet.demo.settlement.payTo;
  const balanceOf = (owner: `0x${string}`) => usdcBalance(chain, devnet, owner);
  const read = <T>(functionName: string, args: unknown[]) =>
    chain.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi, functionName, args }) as Promise<T>;
  const channelOnChain = (id: Hex) => read<readonly [bigint, bigint]>("channels", [id]);
  const record = (id: Hex) => storage.get(id);
  /** How a call would end (simulated): its custom error's name, or "no revert". */
  const outcome = (
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
  async function probe(path: string): Promise<PaymentRequired> {
    const res = await fetch(`${base}${path}`);
    expect(res.status).toBe(402);
    return decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
  }

  /** Sends a hand-made PAYMENT-SIGNATURE; returns the status and the 402's decoded header. */
  async function pay(path: string, payload: PaymentPayload) {
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

  beforeAll(async () => {
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

  it("places the escrow and collector at the SDK's canonical addresses and records them in devnet.json", async () => {
    expect(BATCH_SETTLEMENT_ADDRESS).toBe(sdk.BATCH_SETTLEMENT_ADDRESS);
    expect(ERC3009_DEPOSIT_COLLECTOR_ADDRESS).toBe(sdk.ERC3009_DEPOSIT_COLLECTOR_ADDRESS);
    expect(devnet.chains.settlement?.contracts).toMatchObject({
      batchSettlement: sdk.BATCH_SETTLEMENT_ADDRESS,
      erc3009Collector: sdk.ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
    });
    expect(devnet.demo.settlement).toMatchObject({
      batchSettlement: sdk.BATCH_SETTLEMENT_ADDRESS,
      erc3009Collector: sdk.ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
    });
    expect(await read("MIN_WITHDRAW_DELAY", [])).toBe(900);
    expect(await read("MAX_WITHDRAW_DELAY", [])).toBe(2_592_000);
    const collectorTarget = await chain.readContract({
      address: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
      abi: collectorAbi,
      functionName: "x402BatchSettlement",
    });
    expect(collectorTarget).toBe(BATCH_SETTLEMENT_ADDRESS);
  });

  it("offers channel terms the SDK fills in: the server's authorizer, the withdraw delay, a minimum deposit of 10 prices by default", async () => {
    const [paid] = (await probe("/paid")).accepts;
    const [plain] = (await probe("/default-deposit")).accepts;
    expect(paid).toMatchObject({
      scheme: SCHEME,
      amount: String(PRICE),
      asset: usdc().address,
      extra: {
        receiverAuthorizer: authorizer.address,
        withdrawDelay: WITHDRAW_DELAY,
        minDeposit: String(DEPOSIT),
        name: "USD Coin",
        version: "2",
      },
    });
    expect(plain?.extra.minDeposit).toBe(String(10n * PRICE));
    // Payers hold 1,000 USDC each: 10,000 default deposits at this price, 10,000 of /paid's.
    expect(await balanceOf(devnet.demo.settlement.payers[0] as `0x${string}`)).toBe(1_000_000_000n);
  });

  describe("one payer, one channel", () => {
    const payer = () => batchPayer(devnet, "payer1");
    let client: ReturnType<typeof batchPayer>;
    let channelId: Hex;
    let start: bigint;
    /** What the server has charged on the channel so far (sum of the prices of delivered calls). */
    let charged = 0n;
    /** One /paid call through the official client: answered 200; its decoded PAYMENT-RESPONSE. */
    const paidCall = async () => {
      const res = await client.fetch(`${base}/paid`);
      expect(res.status).toBe(200);
      charged += PRICE;
      return decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
    };

    it("the first paid call deposits: the facilitator submits the payer's signed deposit and it lands on chain", async () => {
      client = payer();
      start = await balanceOf(client.address);
      const settle = await paidCall();
      expect(settle).toMatchObject({
        success: true,
        amount: String(DEPOSIT),
        extra: { chargedAmount: String(PRICE), channelState: { chargedCumulativeAmount: String(PRICE) } },
      });

      const receipt = await chain.getTransactionReceipt({ hash: settle.transaction as Hex });
      expect(receipt.status).toBe("success");
      expect(receipt.from).toBe(facilitator.address.toLowerCase());
      expect(receipt.to).toBe(BATCH_SETTLEMENT_ADDRESS.toLowerCase());
      const [deposited] = parseEventLogs({ abi, logs: receipt.logs, eventName: "Deposited" }) as unknown as {
        args: { channelId: Hex; amount: bigint; newBalance: bigint };
      }[];
      expect(deposited?.args).toMatchObject({ amount: DEPOSIT, newBalance: DEPOSIT });
      channelId = deposited?.args.channelId as Hex;

      const [offered] = (await probe("/paid")).accepts;
      const config = client.scheme.buildChannelConfig(offered as never);
      expect(computeChannelId(config, network())).toBe(channelId);
      expect(await read("getChannelId", [config])).toBe(channelId);

      expect(await channelOnChain(channelId)).toEqual([DEPOSIT, 0n]);
      expect(await balanceOf(client.address)).toBe(start - DEPOSIT);
      expect(await balanceOf(BATCH_SETTLEMENT_ADDRESS)).toBe(DEPOSIT);
      expect(await balanceOf(ERC3009_DEPOSIT_COLLECTOR_ADDRESS)).toBe(0n);
      const stored = await record(channelId);
      expect(stored).toMatchObject({
        chargedCumulativeAmount: String(PRICE),
        balance: String(DEPOSIT),
        totalClaimed: "0",
      });
      expect(stored?.pendingRequest).toBeUndefined();
    });

    it("20 more paid calls are verified off-chain: no transaction on the chain, no facilitator call, no token moved", async () => {
      const block = await chain.getBlockNumber();
      const calls = facilitator.calls.length;
      for (let i = 0; i < 20; i++) {
        expect(await paidCall()).toMatchObject({
          success: true,
          transaction: "",
          extra: { chargedAmount: String(PRICE), channelState: { chargedCumulativeAmount: String(charged) } },
        });
      }
      expect(await chain.getBlockNumber()).toBe(block);
      expect(facilitator.calls.length).toBe(calls);
      expect(await balanceOf(client.address)).toBe(start - DEPOSIT);
      expect(await channelOnChain(channelId)).toEqual([DEPOSIT, 0n]);
      expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(charged));
    });

    it("a call whose handler fails consumes nothing: the reservation is released and the next voucher is the same amount", async () => {
      const res = await client.fetch(`${base}/fails`);
      expect(res.status).toBe(502);
      expect(res.headers.get("payment-response")).toBeNull();
      const stored = await record(channelId);
      expect(stored?.chargedCumulativeAmount).toBe(String(charged));
      expect(stored?.pendingRequest).toBeUndefined();

      expect((await paidCall()).extra?.chargedAmount).toBe(String(PRICE));
      expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(charged));
    });

    it("a replayed voucher is refused with the corrective 402 carrying the channel state, and not served", async () => {
      const served = delivered.get("/paid");
      const replay = client.signatures[1] ?? "";
      const res = await fetch(`${base}/paid`, { headers: { "PAYMENT-SIGNATURE": replay } });
      expect(res.status).toBe(402);
      expect(res.headers.get("payment-response")).toBeNull();
      const required = decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
      expect(required.error).toBe(ERR.mismatch);
      expect(required.accepts[0]?.extra.channelState).toMatchObject({
        channelId,
        chargedCumulativeAmount: String(charged),
      });
      expect(delivered.get("/paid")).toBe(served);
      expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(charged));
    });

    it("a voucher below the charged amount is refused with the corrective 402 and the payer's last signed voucher", async () => {
      const required = await probe("/paid");
      const accepted = required.accepts[0] as PaymentRequired["accepts"][number];
      const config = client.scheme.buildChannelConfig(accepted);
      const voucher = await signVoucher(client.account, channelId, String(charged - PRICE), network());
      const sent = await pay("/paid", {
        x402Version: 2,
        accepted,
        payload: { type: "voucher", channelConfig: config, voucher },
      });
      expect(sent.status).toBe(402);
      expect(sent.settled).toBeNull();
      expect(sent.required?.error).toBe(ERR.mismatch);
      const stored = (await record(channelId)) as Channel;
      expect(sent.required?.accepts[0]?.extra).toMatchObject({
        channelState: { chargedCumulativeAmount: String(charged) },
        voucherState: { signedMaxClaimable: String(charged), signature: stored.signature },
      });
      expect(stored.chargedCumulativeAmount).toBe(String(charged));
    });

    it("a client that lost its local state resynchronises through the corrective 402 and pays exactly one price", async () => {
      const fresh = payer();
      const res = await fresh.fetch(`${base}/paid`);
      expect(res.status).toBe(200);
      charged += PRICE;
      // First voucher from the on-chain baseline (totalClaimed 0) was refused, the retry matched.
      expect(fresh.signatures).toHaveLength(2);
      expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(charged));
      expect(await balanceOf(fresh.address)).toBe(start - DEPOSIT);
    });

    it("a voucher above the deposit is refused as exceeding the channel balance, and not served", async () => {
      const served = delivered.get("/expensive") ?? 0;
      const required = await probe("/expensive");
      const accepted = required.accepts[0] as PaymentRequired["accepts"][number];
      const voucher = await signVoucher(client.account, channelId, String(charged + EXPENSIVE), network());
      const sent = await pay("/expensive", {
        x402Version: 2,
        accepted,
        payload: { type: "voucher", channelConfig: client.scheme.buildChannelConfig(accepted), voucher },
      });
      expect(sent.status).toBe(402);
      expect(sent.required?.error).toBe(ERR.exceedsBalance);
      expect(delivered.get("/expensive") ?? 0).toBe(served);
      const stored = await record(channelId);
      expect(stored?.chargedCumulativeAmount).toBe(String(charged));
      expect(stored?.pendingRequest).toBeUndefined();
    });

    it("the contract enforces the published rules: ceilings, balances, signatures, collector caller, delay bounds, refund nonces", async () => {
      const stored = (await record(channelId)) as Channel;
      const config = stored.channelConfig;
      const chainId = devnet.demo.settlement.chainId;
      const domain = { ...sdk.BATCH_SETTLEMENT_DOMAIN, chainId, verifyingContract: BATCH_SETTLEMENT_ADDRESS };
      const claimRow = (maxClaimableAmount: bigint, signature: Hex, totalClaimed: bigint) => ({
        voucher: { channel: config, maxClaimableAmount },
        signature,
        totalClaimed,
      });
      const authorize = (rows: ReturnType<typeof claimRow>[], signer = authorizer) =>
        signer.signTypedData({
          domain,
          types: sdk.claimBatchTypes,
          primaryType: "ClaimBatch",
          message: {
            claims: rows.map((r) => ({
              channelId,
              maxClaimableAmount: r.voucher.maxClaimableAmount,
              totalClaimed: r.totalClaimed,
            })),
          },
        });
      const claim = async (rows: ReturnType<typeof claimRow>[], signer = authorizer) =>
        outcome("claimWithSignature", [rows, await authorize(rows, signer)]);
      const signed = BigInt(stored.signedMaxClaimable);
      const voucherSig = stored.signature as Hex;

      // The on-chain digests are the SDK's EIP-712 hashes (same domain, same types).
      const digest = await chain.readContract({
        address: BATCH_SETTLEMENT_ADDRESS,
        abi,
        functionName: "getVoucherDigest",
        args: [channelId, signed],
      });
      expect(digest).toBe(
        hashTypedData({
          domain,
          types: sdk.voucherTypes,
          primaryType: "Voucher",
          message: { channelId, maxClaimableAmount: signed },
        }),
      );

      expect(await claim([claimRow(signed, voucherSig, signed)])).toBe("no revert");
      expect(await claim([claimRow(signed, voucherSig, signed + 1n)])).toBe("ClaimExceedsCeiling");
      const overDeposit = await signVoucher(client.account, channelId, String(DEPOSIT + 1n), network());
      expect(await claim([claimRow(DEPOSIT + 1n, overDeposit.signature as Hex, DEPOSIT + 1n)])).toBe(
        "ClaimExceedsBalance",
      );
      const stranger = privateKeyToAccount(generatePrivateKey());
      expect(await claim([claimRow(signed, voucherSig, signed)], stranger)).toBe("InvalidSignature");
      const forged = await signVoucher(stranger, channelId, String(signed), network());
      expect(await claim([claimRow(signed, forged.signature as Hex, signed)])).toBe("InvalidSignature");

      expect(
        await outcome("collect", [config.payer, config.token, 1n, channelId, "0x"], {
          to: ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
          contractAbi: collectorAbi,
        }),
      ).toBe("OnlyX402BatchSettlement");
      expect(
        await outcome("deposit", [
          { ...config, withdrawDelay: 899 },
          1n,
          ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
          "0x",
        ]),
      ).toBe("WithdrawDelayOutOfRange");
      const refundSig = (nonce: bigint) =>
        authorizer.signTypedData({
          domain,
          types: sdk.refundTypes,
          primaryType: "Refund",
          message: { channelId, nonce, amount: 1n },
        });
      const refund = async (nonce: bigint) =>
        outcome("refundWithSignature", [config, 1n, nonce, await refundSig(nonce)]);
      expect(await refund(0n)).toBe("no revert");
      expect(await refund(1n)).toBe("InvalidRefundNonce");
      expect(await outcome("initiateWithdraw", [config, 1n])).toBe("InvalidChannel");
    });

    it("the channel manager's claimAndSettle pays payTo exactly the sum of the prices of the delivered calls", async () => {
      expect(charged).toBe(BigInt(delivered.get("/paid") ?? 0) * PRICE);
      const manager = A.scheme.createChannelManager(facilitator, network(), usdc().address);
      const before = await balanceOf(payTo());
      const { claims, settle } = await manager.claimAndSettle();
      expect(claims).toEqual([{ vouchers: 1, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) }]);
      const receipt = await chain.getTransactionReceipt({ hash: settle?.transaction as Hex });
      const [settled] = parseEventLogs({ abi, logs: receipt.logs, eventName: "Settled" }) as unknown as {
        args: { receiver: string; amount: bigint };
      }[];
      expect(settled?.args).toMatchObject({ receiver: payTo(), amount: charged });

      expect(await balanceOf(payTo())).toBe(before + charged);
      expect(await channelOnChain(channelId)).toEqual([DEPOSIT, charged]);
      expect(await read("receivers", [payTo(), usdc().address])).toEqual([charged, charged]);
      expect((await record(channelId))?.totalClaimed).toBe(String(charged));
    });

    it("refund() returns the rest of the deposit to the payer and forgets the channel", async () => {
      const manager = A.scheme.createChannelManager(facilitator, network(), usdc().address);
      const [refund] = await manager.refund([channelId]);
      expect(refund?.channel).toBe(channelId);
      expect(await balanceOf(client.address)).toBe(start - charged);
      expect(await channelOnChain(channelId)).toEqual([charged, charged]);
      expect(await read("refundNonce", [channelId])).toBe(1n);
      expect(await record(channelId)).toBeUndefined();
    });

    it("after the refund an old voucher is refused as below what was claimed on chain", async () => {
      const served = delivered.get("/paid");
      const res = await fetch(`${base}/paid`, {
        headers: { "PAYMENT-SIGNATURE": client.signatures[1] ?? "" },
      });
      expect(res.status).toBe(402);
      const required = decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
      expect(required.error).toBe(ERR.belowClaimed);
      expect(delivered.get("/paid")).toBe(served);
    });
  });

  it("Verify and Settle can run on two replicas with the payload decoded twice, once the pending id is handed over", async () => {
    const client = batchPayer(devnet, "payer2");
    const start = await balanceOf(client.address);
    const required = await probe("/paid");
    const requirements = required.accepts[0] as PaymentRequired["accepts"][number];
    const channelId = computeChannelId(client.scheme.buildChannelConfig(requirements), network());
    /** What the gateway would carry between the two RPCs: the header, and the verifier's pending id. */
    const nextHeader = async () => {
      const payload = await client.client.createPaymentPayload(required);
      return { payload, header: encodePaymentSignatureHeader(payload) };
    };
    const handOver = async (replica: Replica, header: string, pendingId: string | undefined) => {
      const payload = decodePaymentSignatureHeader(header);
      replica.scheme.mergeRequestContext(payload, {
        channelId,
        pendingId,
        reservationCommitted: true,
        // Must be set: a cancel without it deletes the channel record (see the report).
        channelSnapshot: await record(channelId),
      });
      return payload;
    };

    /** The client reads the PAYMENT-RESPONSE the gateway would send. */
    const deliver = (payload: PaymentPayload, settled: object) =>
      client.http.processPaymentResult(
        payload,
        (name) =>
          name.toUpperCase() === "PAYMENT-RESPONSE" ? encodePaymentResponseHeader(settled as never) : null,
        200,
      );

    // The deposit: verified on A, settled (submitted on chain) on B.
    const opening = await nextHeader();
    const depositOnA = decodePaymentSignatureHeader(opening.header);
    expect(await A.server.verifyPayment(depositOnA, requirements)).toMatchObject({ isValid: true });
    const depositPending = A.scheme.readRequestContext(depositOnA)?.pendingId;
    const deposited = await B.server.settlePayment(
      await handOver(B, opening.header, depositPending),
      requirements,
    );
    expect(deposited).toMatchObject({
      success: true,
      amount: String(DEPOSIT),
      extra: { chargedAmount: String(PRICE), channelState: { chargedCumulativeAmount: String(PRICE) } },
    });
    expect(await channelOnChain(channelId)).toEqual([DEPOSIT, 0n]);
    expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(PRICE));
    await deliver(opening.payload, deposited);

    // A voucher: replica A verifies (the Verify RPC) and reserves the channel under a pending id...
    const first = await nextHeader();
    const onA = decodePaymentSignatureHeader(first.header);
    expect(await A.server.verifyPayment(onA, requirements)).toMatchObject({ isValid: true });
    const pendingId = A.scheme.readRequestContext(onA)?.pendingId;
    expect((await record(channelId))?.pendingRequest?.pendingId).toBe(pendingId);

    // ...replica B gets the Settle RPC with the payload decoded again: without the pending id the
    // SDK takes it for a concurrent request and commits nothing.
    await expect(
      B.server.settlePayment(decodePaymentSignatureHeader(first.header), requirements),
    ).rejects.toMatchObject({ errorReason: ERR.busy });
    expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(PRICE));

    // Handed the pending id, replica B commits the charge, with no facilitator call.
    const calls = facilitator.calls.length;
    const settled = await B.server.settlePayment(await handOver(B, first.header, pendingId), requirements);
    expect(settled).toMatchObject({
      success: true,
      transaction: "",
      extra: { chargedAmount: String(PRICE), channelState: { chargedCumulativeAmount: String(2n * PRICE) } },
    });
    expect(facilitator.calls.length).toBe(calls);
    expect((await record(channelId))?.pendingRequest).toBeUndefined();
    await deliver(first.payload, settled);

    // A second request on the channel while one is reserved gets "channel busy", on any replica.
    const second = await nextHeader();
    const again = decodePaymentSignatureHeader(second.header);
    expect(await A.server.verifyPayment(again, requirements)).toMatchObject({ isValid: true });
    const pending2 = A.scheme.readRequestContext(again)?.pendingId;
    expect(
      await B.server.verifyPayment(decodePaymentSignatureHeader(second.header), requirements),
    ).toMatchObject({
      isValid: false,
      invalidReason: ERR.busy,
    });

    // The handler failed: replica B releases the reservation (the cancel path), nothing is charged...
    await B.server
      .createPaymentCancellationDispatcher(await handOver(B, second.header, pending2), requirements)
      .cancel({ reason: "handler_failed", responseStatus: 502 });
    const released = await record(channelId);
    expect(released?.pendingRequest).toBeUndefined();
    expect(released?.chargedCumulativeAmount).toBe(String(2n * PRICE));

    // ...so the same voucher is accepted on retry.
    const retry = decodePaymentSignatureHeader(second.header);
    expect(await B.server.verifyPayment(retry, requirements)).toMatchObject({ isValid: true });
    expect(await B.server.settlePayment(retry, requirements)).toMatchObject({ success: true });
    expect((await record(channelId))?.chargedCumulativeAmount).toBe(String(3n * PRICE));

    // A refund with vouchers still unclaimed claims and refunds in one multicall transaction.
    const manager = B.scheme.createChannelManager(facilitator, network(), usdc().address);
    const [refund] = await manager.refund([channelId]);
    const receipt = await chain.getTransactionReceipt({ hash: refund?.transaction as Hex });
    const events = parseEventLogs({ abi, logs: receipt.logs }).map((l) => l.eventName);
    expect(events).toEqual(expect.arrayContaining(["Claimed", "Refunded"]));
    expect(await channelOnChain(channelId)).toEqual([3n * PRICE, 3n * PRICE]);
    expect(await balanceOf(client.address)).toBe(start - 3n * PRICE);
    const before = await balanceOf(payTo());
    await manager.settle();
    expect(await balanceOf(payTo())).toBe(before + 3n * PRICE);
  });

  it("the payer can ask for its refund over HTTP: the server claims what it charged and returns the rest in one transaction", async () => {
    const client = batchPayer(devnet, "payer4");
    const start = await balanceOf(client.address);
    expect((await client.fetch(`${base}/paid`)).status).toBe(200);
    expect((await client.fetch(`${base}/paid`)).status).toBe(200);
    const channelId = computeChannelId(
      client.scheme.buildChannelConfig((await probe("/paid")).accepts[0] as never),
      network(),
    );
    const served = delivered.get("/paid");

    const refund = await client.scheme.refund(`${base}/paid`);
    expect(refund).toMatchObject({ success: true, amount: String(DEPOSIT - 2n * PRICE) });
    const receipt = await chain.getTransactionReceipt({ hash: refund.transaction as Hex });
    const events = parseEventLogs({ abi, logs: receipt.logs }).map((l) => l.eventName);
    expect(events).toEqual(expect.arrayContaining(["Claimed", "Refunded"]));
    expect(await balanceOf(client.address)).toBe(start - 2n * PRICE);
    expect(await channelOnChain(channelId)).toEqual([2n * PRICE, 2n * PRICE]);
    expect(await record(channelId)).toBeUndefined();
    expect(delivered.get("/paid")).toBe(served);
  });

  // Moves the devnet clock forward: keep it last.
  it("a payer can leave without the server: timed withdrawal after the delay, minus what the server claimed meanwhile", async () => {
    const client = batchPayer(devnet, "payer3");
    const start = await balanceOf(client.address);
    expect((await client.fetch(`${base}/paid`)).status).toBe(200);
    const config = client.scheme.buildChannelConfig((await probe("/paid")).accepts[0] as never);
    const channelId = computeChannelId(config, network());
    const wallet = createWalletClient({
      account: client.account,
      transport: http(devnet.chains.settlement?.rpcUrl, { retryCount: 0 }),
    });
    const send = async (functionName: string, args: unknown[]) => {
      const hash = await wallet.writeContract({
        address: BATCH_SETTLEMENT_ADDRESS,
        abi,
        functionName,
        args,
        chain: null,
      });
      return chain.waitForTransactionReceipt({ hash });
    };
    const finalize = () => outcome("finalizeWithdraw", [config], { from: client.address });

    expect((await send("initiateWithdraw", [config, DEPOSIT])).status).toBe("success");
    const [amount, initiatedAt] = await read<readonly [bigint, number]>("pendingWithdrawals", [channelId]);
    expect(amount).toBe(DEPOSIT);
    expect(initiatedAt).toBeGreaterThan(0);
    expect(await finalize()).toBe("WithdrawDelayNotElapsed");

    // Within the delay the server claims the voucher it holds.
    const manager = A.scheme.createChannelManager(facilitator, network(), usdc().address);
    const claims = await manager.claim({
      selectClaimChannels: (channels) => channels.filter((c) => c.channelId === channelId),
    });
    expect(claims).toHaveLength(1);
    expect(await channelOnChain(channelId)).toEqual([DEPOSIT, PRICE]);

    await chain.request({ method: "evm_increaseTime" as never, params: [WITHDRAW_DELAY] as never });
    await chain.request({ method: "evm_mine" as never });
    expect(await finalize()).toBe("no revert");
    expect((await send("finalizeWithdraw", [config])).status).toBe("success");
    expect(await balanceOf(client.address)).toBe(start - PRICE);
    expect(await channelOnChain(channelId)).toEqual([PRICE, PRICE]);
    expect(await read("pendingWithdrawals", [channelId])).toEqual([0n, 0]);
  });
});
