// The devnet's Tempo chain proven with nothing but the unmodified official mppx 0.11.0 server and
// client (no Tollgate service): a tiny Node HTTP server with Mppx.create + Store.redis (real Redis,
// own key prefix) offers charge in pathUSD and USDC.e and a USDC.e session on every paid route.
// Real: anvil's Tempo mode (TIP-20 precompiles, fee AMM, expiring nonces). Stand-ins: the TIP-1034
// channel reserve (a contract of ours at the precompile's address) and the devnet's JSON-RPC shim
// that the server's RPC goes through (it seeds each open's expiringNonceHash and runs the Tempo call
// batches anvil's eth_call skips). Clients use anvil directly.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { byRole, type Devnet, startDevnet, TEMPO_ADDRESSES } from "@tollgate/devnet";
import { Challenge, Credential, Errors, Receipt } from "mppx";
import { Mppx as MppxClient, tempo as tempoClientMethods } from "mppx/client";
import { generate as generateDiscovery, validate as validateDiscovery } from "mppx/discovery";
import { Mppx, tempo } from "mppx/server";
import {
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  type Hex,
  isAddressEqual,
  maxUint256,
  parseEventLogs,
  parseUnits,
  zeroAddress,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { getBlockNumber, getCode, getTransactionReceipt, readContract, simulateContract } from "viem/actions";
import { Abis } from "viem/tempo";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  deleteKeys,
  mppxRedisStore,
  recordingFetch,
  redisClient,
  tempoChain,
  tempoClient,
  tip20Balance,
  transactionsFrom as transactionsMinedFrom,
} from "./support/mppx.ts";

const CHAIN_ID = 4217;
const { pathUsd: PATH_USD, usdce: USDC_E, channelReserve: RESERVE } = TEMPO_ADDRESSES;
/** Two route prices (human units, 6 decimals) and what they are in raw units. */
const PRICES = { "/cheap": "0.001", "/dear": "0.025" } as const;
const raw = (price: string) => parseUnits(price, 6);
const SESSION_DEPOSIT = "0.3";
const SETTLE_EVERY_UNITS = 10;

type Route = keyof typeof PRICES;

/** The three MPP offers of a paid route: charge in both currencies, session in USDC.e. */
const offersFor = (amount: string) => ({
  chargePathUsd: { amount, currency: PATH_USD, chainId: CHAIN_ID },
  chargeUsdce: { amount, currency: USDC_E, chainId: CHAIN_ID },
  session: { amount, currency: USDC_E, chainId: CHAIN_ID, unitType: "request" },
});

describe("Tempo devnet chain (anvil --network tempo) with the unmodified mppx server and client", () => {
  let devnet: Devnet;
  let tempoUrls: { rpcUrl: string; anvilRpcUrl: string };
  let server: Server;
  let base: string;
  let mppx: ReturnType<typeof createMppx>;
  let payTo: Address;
  const secretKey = randomBytes(32).toString("base64");
  const redis = redisClient();
  const prefix = `tollgate-test:mppx:${process.pid}:${Date.now()}:`;
  const file = join(tmpdir(), `tollgate-devnet-tempo-${process.pid}.json`);

  const account = (role: string) => {
    const found = devnet.accounts.find((a) => a.role === role);
    if (!found) throw new Error(`no account ${role}`);
    return privateKeyToAccount(found.privateKey);
  };
  const balance = (token: Address, owner: Address) => tip20Balance(tempoUrls.anvilRpcUrl, token, owner);
  const chain = () => tempoClient(tempoUrls.anvilRpcUrl);

  function createMppx(serverRole: string) {
    // The server signs settle/close with an account of its own (the channel operator), paying fees
    // in pathUSD, so USDC.e moves only between payer, reserve and recipient.
    const serverAccount = account(serverRole);
    const serverClient = tempoClient(tempoUrls.rpcUrl, serverAccount);
    const store = mppxRedisStore(redis, prefix);
    return Mppx.create({
      methods: [
        // One charge method; the currency is per offer. (Two tempo.charge instances would share the
        // handler key "tempo/charge": the last one registered shadows the first.)
        tempo.charge({ recipient: payTo, getClient: () => serverClient, store }),
        tempo.session({
          account: serverAccount,
          recipient: payTo,
          operator: serverAccount.address,
          currency: USDC_E,
          getClient: () => serverClient,
          store,
          feeToken: PATH_USD,
          suggestedDeposit: SESSION_DEPOSIT,
          settlementSchedule: { units: SETTLE_EVERY_UNITS },
        }),
      ],
      secretKey,
      realm: "tollgate-devnet-test",
    });
  }

  function composed(amount: string) {
    const o = offersFor(amount);
    return mppx.compose(
      ["tempo/charge", o.chargePathUsd],
      ["tempo/charge", o.chargeUsdce],
      ["tempo/session", o.session],
    );
  }

  /**
   * `/cheap`, `/dear`: mppx's own one-step flow (verify and collect, then serve).
   * `/work`: verify before the work, collect only after it succeeded (`?outcome=fail` fails it),
   * with mppx.validateCredential / mppx.broadcastCredential — the split the gateway needs.
   */
  function startServer(): Promise<void> {
    const handlers = {
      "/cheap": composed(PRICES["/cheap"]),
      "/dear": composed(PRICES["/dear"]),
      "/work": composed(PRICES["/cheap"]),
    };
    const splitOffers = offersFor(PRICES["/cheap"]);
    const offerOf = (credential: Credential.Credential) => {
      const { intent, request } = credential.challenge;
      if (intent === "session") return splitOffers.session;
      return isAddressEqual(request.currency as Address, PATH_USD)
        ? splitOffers.chargePathUsd
        : splitOffers.chargeUsdce;
    };

    const verifyThenCollect = async (req: IncomingMessage, res: ServerResponse, url: URL) => {
      const payment = Credential.extractPaymentScheme(req.headers.authorization ?? "");
      if (!payment) {
        await Mppx.toNodeListener(handlers["/work"])(req, res); // the 402 with all offers
        return;
      }
      const credential = Credential.deserialize(payment);
      const capturedRequest = {
        method: req.method ?? "GET",
        url,
        headers: new Headers(req.headers as Record<string, string>),
        hasBody: false,
      };
      const options = { capturedRequest, request: offerOf(credential) };
      const action = (credential.payload as { action?: string }).action;
      try {
        // Session management (close, top-up) is not work: collect it straight away.
        const work = action !== "close" && action !== "topUp";
        if (work) await mppx.validateCredential(credential, options);
        if (work && url.searchParams.get("outcome") === "fail") {
          res.writeHead(502, { "content-type": "application/json" }).end('{"error":"upstream failed"}');
          return;
        }
        const receipt = await mppx.broadcastCredential(credential, options);
        res.writeHead(work ? 200 : 204, { "payment-receipt": Receipt.serialize(receipt) });
        res.end(work ? JSON.stringify({ served: url.pathname }) : undefined);
      } catch (err) {
        const error = err instanceof Errors.PaymentError ? err : new Errors.InternalPaymentError();
        res.writeHead(error.status, { "content-type": "application/problem+json" });
        res.end(JSON.stringify(error.toProblemDetails(credential.challenge.id)));
      }
    };

    server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", base);
      const route = url.pathname as Route | "/work";
      const run = async () => {
        if (route === "/work") return verifyThenCollect(req, res, url);
        const handler = handlers[route];
        if (!handler) {
          res.writeHead(404).end();
          return;
        }
        const result = await Mppx.toNodeListener(handler)(req, res);
        if (result.status === 402) return; // challenge or session management answer already sent
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ served: route }));
      };
      run().catch((err: Error) => {
        if (!res.headersSent) res.writeHead(500);
        res.end(err.message);
      });
    });
    return new Promise((resolve) =>
      server.listen(0, "127.0.0.1", () => {
        base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        resolve();
      }),
    );
  }

  /** An official mppx client paying charges from `role` in `currency` with one payload kind. */
  function chargeClient(role: string, currency: Address, mode: "pull" | "push") {
    const recorder = recordingFetch();
    const client = MppxClient.create({
      polyfill: false,
      fetch: recorder.fetch,
      methods: [tempoClientMethods.charge({ account: account(role), mode, getClient: () => chain() })],
      // The 402 offers both currencies: pay in the one under test.
      orderChallenges: (candidates) =>
        candidates.filter((c) => isAddressEqual(c.challenge.request.currency as Address, currency)),
    });
    return { client, sent: recorder.sent };
  }

  /** An official session client (mppx's manager) for `role`, with its and the recipient's USDC.e. */
  async function sessionPayer(role: string) {
    const payer = account(role);
    const manager = tempoClientMethods.session.manager({
      account: payer,
      getClient: () => chain(),
      maxDeposit: "1",
    });
    return {
      payer,
      manager,
      payerBefore: await balance(USDC_E, payer.address),
      payToBefore: await balance(USDC_E, payTo),
    };
  }

  /** The channel as mppx stores it (Store.redis, key = channel id; ox's JSON marks bigints). */
  async function storedChannel(
    channelId: Hex,
  ): Promise<{ spent: bigint; units: number; finalized: boolean }> {
    const json = JSON.parse((await redis.get(`${prefix}${channelId}`)) ?? "{}");
    return {
      spent: BigInt(String(json.spent).replace("#__bigint", "")),
      units: json.units,
      finalized: json.finalized,
    };
  }

  /** The channel reserve's events of one kind in a mined transaction. */
  async function reserveEvents<name extends "ChannelOpened" | "Settled" | "ChannelClosed">(
    hash: string | undefined,
    eventName: name,
  ) {
    const { logs } = await getTransactionReceipt(chain(), { hash: hash as Hex });
    return parseEventLogs({ abi: Abis.tip20ChannelReserve, logs, eventName });
  }

  /** Transactions mined in (from, to] whose sender is `who`. */
  const transactionsFrom = (who: Address, from: bigint, to: bigint) =>
    transactionsMinedFrom(tempoUrls.anvilRpcUrl, who, from, to);

  beforeAll(async () => {
    devnet = await startDevnet({ file });
    tempoUrls = tempoChain(devnet);
    payTo = byRole(devnet.accounts, "payTo");
    await redis.connect();
    mppx = createMppx("facilitator");
    await startServer();
  }, 60_000);

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    if (redis.isOpen) {
      await deleteKeys(redis, prefix);
      await redis.close();
    }
    await devnet?.stop();
  });

  it("chain 4217: pathUSD and USDC.e at their mainnet addresses, payers hold 1,000 of each, the fee pool and reserve are in place", async () => {
    expect(await chain().request({ method: "eth_chainId" })).toBe("0x1079");
    expect(devnet.chains.tempo?.rpcUrl).not.toBe(tempoUrls.anvilRpcUrl); // servers use the shim
    expect(devnet.chains.tempo?.contracts).toMatchObject({
      pathUsd: PATH_USD,
      usdce: USDC_E,
      channelReserve: RESERVE,
    });
    expect(PATH_USD).toBe("0x20C0000000000000000000000000000000000000");
    expect(USDC_E).toBe("0x20C000000000000000000000b9537d11c60E8b50");
    const { tempo: demo } = devnet.demo;
    expect([demo.pathUsd.decimals, demo.usdce.decimals]).toEqual([6, 6]);
    expect(demo.usdce.currency).toBe("USD");
    for (const payer of demo.payers) {
      expect(await balance(PATH_USD, payer)).toBe(raw("1000"));
      expect(await balance(USDC_E, payer)).toBe(raw("1000"));
      const allowance = await readContract(chain(), {
        address: USDC_E,
        abi: Abis.tip20,
        functionName: "allowance",
        args: [payer, RESERVE],
      });
      expect(allowance).toBe(maxUint256);
    }
    const pool = await readContract(chain(), {
      address: TEMPO_ADDRESSES.feeManager,
      abi: Abis.feeAmm,
      functionName: "getPool",
      args: [USDC_E, PATH_USD],
    });
    expect(pool.reserveValidatorToken).toBe(BigInt(demo.feePool.reserveValidatorToken));
    expect(pool.reserveValidatorToken > 0n).toBe(true);
    expect((await getCode(chain(), { address: RESERVE }))?.length).toBeGreaterThan(1000);
  });

  it("a paid route answers 402 with three Payment challenges (HMAC ids) and a problem+json body", async () => {
    const res = await fetch(`${base}/dear`);
    expect(res.status).toBe(402);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const body = (await res.json()) as { type: string; status: number };
    expect(body).toMatchObject({ type: "https://paymentauth.org/problems/payment-required", status: 402 });
    const challenges = Challenge.fromResponseList(res);
    expect(challenges.map((c) => [c.method, c.intent, c.request.currency, c.request.amount])).toEqual([
      ["tempo", "charge", PATH_USD, "25000"],
      ["tempo", "charge", USDC_E, "25000"],
      ["tempo", "session", USDC_E, "25000"],
    ]);
    for (const challenge of challenges) {
      expect(challenge.realm).toBe("tollgate-devnet-test");
      expect(challenge.request.methodDetails).toMatchObject({ chainId: CHAIN_ID });
      expect(Challenge.verify(challenge, { secretKey })).toBe(true);
      expect(Challenge.verify(challenge, { secretKey: randomBytes(32).toString("base64") })).toBe(false);
    }
    expect(challenges[2]?.request.methodDetails).toMatchObject({ escrowContract: RESERVE });
  });

  describe("charge", () => {
    for (const [currencyName, currency] of [
      ["pathUSD", PATH_USD],
      ["USDC.e", USDC_E],
    ] as const) {
      for (const route of Object.keys(PRICES) as Route[]) {
        for (const [mode, payloadKind, role] of [
          ["pull", "transaction", "payer1"],
          ["push", "hash", "payer2"],
        ] as const) {
          it(`${currencyName} for ${route} (${PRICES[route]}), ${payloadKind} payload: 200, a receipt, the recipient gets exactly the price`, async () => {
            const { client, sent } = chargeClient(role, currency, mode);
            const before = await balance(currency, payTo);
            const res = await client.fetch(`${base}${route}`);
            expect(res.status).toBe(200);
            expect(await res.json()).toEqual({ served: route });
            const receipt = Receipt.fromResponse(res);
            expect(receipt).toMatchObject({ method: "tempo", status: "success" });
            expect(await balance(currency, payTo)).toBe(before + raw(PRICES[route]));
            const credential = Credential.deserialize(sent.at(-1) ?? "");
            expect(credential.payload).toMatchObject({ type: payloadKind });
            expect(credential.source).toBe(`did:pkh:eip155:${CHAIN_ID}:${account(role).address}`);
            const mined = await getTransactionReceipt(chain(), { hash: receipt.reference as Hex });
            expect(mined.status).toBe("success");
            // The replay claim lives in Redis under mppx's key for the transaction hash.
            expect(await redis.get(`${prefix}mppx:charge:${receipt.reference.toLowerCase()}`)).toContain(
              '"type":"mppx:replay"',
            );
          });
        }
      }
    }

    for (const [mode, payloadKind] of [
      ["pull", "transaction"],
      ["push", "hash"],
    ] as const) {
      it(`a replayed ${payloadKind} credential is refused and moves no money`, async () => {
        const { client, sent } = chargeClient("payer3", USDC_E, mode);
        expect((await client.fetch(`${base}/cheap`)).status).toBe(200);
        const before = await balance(USDC_E, payTo);
        const replay = await fetch(`${base}/cheap`, { headers: { authorization: sent.at(-1) ?? "" } });
        expect(replay.status).toBe(402);
        expect(replay.headers.get("payment-receipt")).toBeNull();
        expect(await replay.json()).toMatchObject({
          type: "https://paymentauth.org/problems/verification-failed",
          detail: expect.stringContaining("already been used"),
        });
        expect(await balance(USDC_E, payTo)).toBe(before);
      });
    }

    it("a credential for the cheap route is refused at the dear one and by an altered challenge, and stays good for its own route", async () => {
      const { client } = chargeClient("payer3", PATH_USD, "pull");
      const credential = await client.createCredential(await fetch(`${base}/cheap`));
      const before = await balance(PATH_USD, payTo);

      const dear = await fetch(`${base}/dear`, { headers: { authorization: credential } });
      expect(dear.status).toBe(402);
      expect(await dear.json()).toMatchObject({
        type: "https://paymentauth.org/problems/invalid-challenge",
        detail: expect.stringContaining("amount does not match"),
      });

      // Raising the amount inside the echoed challenge breaks its HMAC id.
      const parsed = Credential.deserialize(credential);
      const altered = Credential.serialize({
        ...parsed,
        challenge: { ...parsed.challenge, request: { ...parsed.challenge.request, amount: "25000" } },
      });
      const forged = await fetch(`${base}/dear`, { headers: { authorization: altered } });
      expect(forged.status).toBe(402);
      expect(await forged.json()).toMatchObject({
        type: "https://paymentauth.org/problems/invalid-challenge",
        detail: expect.stringContaining("not issued by this server"),
      });
      expect(await balance(PATH_USD, payTo)).toBe(before);

      const own = await fetch(`${base}/cheap`, { headers: { authorization: credential } });
      expect(own.status).toBe(200);
      expect(await balance(PATH_USD, payTo)).toBe(before + raw(PRICES["/cheap"]));
    });

    it("a USDC.e charge from an account without USDC.e is refused before broadcast (the shim runs the Tempo call batch anvil's eth_call skips); mppx answers 500 internal-payment-error", async () => {
      const broke = account("spare1");
      expect(await balance(USDC_E, broke.address)).toBe(0n);
      const { client } = chargeClient("spare1", USDC_E, "pull");
      const before = await balance(USDC_E, payTo);
      const startBlock = await getBlockNumber(chain());
      const res = await client.fetch(`${base}/cheap`);
      expect(res.status).toBe(500);
      expect(await res.json()).toMatchObject({
        type: "https://paymentauth.org/problems/internal-payment-error",
      });
      expect(await balance(USDC_E, payTo)).toBe(before);
      expect(await transactionsFrom(broke.address, startBlock, await getBlockNumber(chain()))).toEqual([]);
    });

    for (const [mode, payloadKind] of [
      ["pull", "transaction"],
      ["push", "hash"],
    ] as const) {
      it(`verify before the work, collect after it (${payloadKind}): a failed call collects nothing and the credential then pays for the retry`, async () => {
        const { client, sent } = chargeClient("payer5", PATH_USD, mode);
        const before = await balance(PATH_USD, payTo);
        const failed = await client.fetch(`${base}/work?outcome=fail`);
        expect(failed.status).toBe(502);
        expect(failed.headers.get("payment-receipt")).toBeNull();
        // transaction: nothing was broadcast. hash: the client's own transfer already landed, but
        // the server has not claimed the hash, so the same credential still pays for one call.
        const movedByClient = payloadKind === "hash" ? raw(PRICES["/cheap"]) : 0n;
        expect(await balance(PATH_USD, payTo)).toBe(before + movedByClient);

        const retry = await fetch(`${base}/work`, { headers: { authorization: sent.at(-1) ?? "" } });
        expect(retry.status).toBe(200);
        expect(Receipt.fromResponse(retry).status).toBe("success");
        expect(await balance(PATH_USD, payTo)).toBe(before + raw(PRICES["/cheap"]));
        const again = await fetch(`${base}/work`, { headers: { authorization: sent.at(-1) ?? "" } });
        expect(again.status).toBe(402);
        expect(await balance(PATH_USD, payTo)).toBe(before + raw(PRICES["/cheap"]));
      });
    }
  });

  describe("session — channel reserve: a contract of ours standing in for the TIP-1034 precompile; opens seeded by the devnet's JSON-RPC shim", () => {
    it("open with a deposit, 20 voucher-paid requests with no payer transaction, scheduled settles, a top-up, close: the recipient gets exactly the sum of the prices, the payer the rest", async () => {
      const { payer, manager, payerBefore, payToBefore } = await sessionPayer("payer4");
      const reserveBefore = await balance(USDC_E, RESERVE);

      // Open: the first request carries the open transaction (the server broadcasts it) and pays.
      const opened = await manager.fetch(`${base}/cheap`);
      expect(opened.status).toBe(200);
      expect(opened.receipt).toMatchObject({ intent: "session", spent: "1000", units: 1 });
      const channelId = opened.receipt?.channelId as Hex;
      const [openEvent] = await reserveEvents(opened.receipt?.txHash, "ChannelOpened");
      expect(openEvent?.args).toMatchObject({
        channelId,
        payer: payer.address,
        payee: payTo,
        deposit: raw(SESSION_DEPOSIT),
      });
      expect(openEvent?.args.expiringNonceHash).not.toBe(`0x${"0".repeat(64)}`);
      expect(await balance(USDC_E, payer.address)).toBe(payerBefore - raw(SESSION_DEPOSIT));

      // 20 paid requests, each with an off-chain cumulative voucher.
      let spent = raw(PRICES["/cheap"]);
      const settleTxs: Hex[] = [];
      const spentAtSettle: bigint[] = [];
      const firstBlock = await getBlockNumber(chain());
      for (let i = 0; i < 20; i++) {
        const route: Route = i % 2 === 0 ? "/dear" : "/cheap";
        const res = await manager.fetch(`${base}${route}`);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ served: route });
        spent += raw(PRICES[route]);
        expect(res.receipt).toMatchObject({ channelId, spent: String(spent), units: i + 2 });
        if (res.receipt?.txHash) {
          settleTxs.push(res.receipt.txHash as Hex);
          spentAtSettle.push(spent);
        }
      }
      const lastBlock = await getBlockNumber(chain());
      expect(await transactionsFrom(payer.address, firstBlock, lastBlock)).toEqual([]);
      // Scheduled settles at units 10 and 20, sent by the server's operator account.
      expect(settleTxs).toHaveLength(2);
      expect(spentAtSettle).toEqual([5n * raw("0.026"), 10n * raw("0.026")]);
      for (const hash of settleTxs) {
        const settled = await getTransactionReceipt(chain(), { hash });
        expect(isAddressEqual(settled.from, account("facilitator").address)).toBe(true);
        expect(await reserveEvents(hash, "Settled")).toHaveLength(1);
      }
      const afterVouchers = await readContract(chain(), {
        address: RESERVE,
        abi: Abis.tip20ChannelReserve,
        functionName: "getChannelState",
        args: [channelId],
      });
      expect(afterVouchers.settled).toBe(spentAtSettle.at(-1));
      expect(await balance(USDC_E, payTo)).toBe(payToBefore + afterVouchers.settled);

      // Top-up, then requests beyond the first deposit.
      const topUp = await manager.topUp("0.2");
      expect(topUp?.txHash).toMatch(/^0x[0-9a-f]{64}$/);
      const toppedUp = await readContract(chain(), {
        address: RESERVE,
        abi: Abis.tip20ChannelReserve,
        functionName: "getChannelState",
        args: [channelId],
      });
      expect(toppedUp.deposit).toBe(raw(SESSION_DEPOSIT) + raw("0.2"));
      for (let i = 0; i < 4; i++) {
        const res = await manager.fetch(`${base}/dear`);
        expect(res.status).toBe(200);
        spent += raw(PRICES["/dear"]);
        expect(res.receipt?.spent).toBe(String(spent));
      }
      expect(spent > raw(SESSION_DEPOSIT)).toBe(true);

      // Close: the payee gets exactly what was spent, the payer the rest of both deposits.
      const closed = await manager.close();
      const [closeEvent] = await reserveEvents(closed?.txHash, "ChannelClosed");
      expect(closeEvent?.args).toMatchObject({
        channelId,
        settledToPayee: spent,
        refundedToPayer: raw(SESSION_DEPOSIT) + raw("0.2") - spent,
      });
      expect(await balance(USDC_E, payTo)).toBe(payToBefore + spent);
      expect(await balance(USDC_E, payer.address)).toBe(payerBefore - spent);
      expect(await balance(USDC_E, RESERVE)).toBe(reserveBefore);
      // mppx keeps the channel in the store under its id: spent and finalized, persisted in Redis.
      expect(await storedChannel(channelId)).toMatchObject({ spent, units: 25, finalized: true });
    });

    it("verify before the work, collect after it: a failed call moves the channel's spent by nothing", async () => {
      const { payer, manager, payerBefore, payToBefore } = await sessionPayer("payer6");
      const price = raw(PRICES["/cheap"]);

      const opened = await manager.fetch(`${base}/work`);
      expect(opened.status).toBe(200);
      const channelId = opened.receipt?.channelId as Hex;
      const spentInStore = async () => (await storedChannel(channelId)).spent;
      expect(await spentInStore()).toBe(price);

      const failed = await manager.fetch(`${base}/work?outcome=fail`);
      expect(failed.status).toBe(502);
      expect(await spentInStore()).toBe(price);
      for (let i = 0; i < 2; i++) expect((await manager.fetch(`${base}/work`)).status).toBe(200);
      expect(await spentInStore()).toBe(3n * price);

      await manager.close();
      expect(await balance(USDC_E, payTo)).toBe(payToBefore + 3n * price);
      expect(await balance(USDC_E, payer.address)).toBe(payerBefore - 3n * price);
    });

    it("the stand-in refuses an open the shim has not seeded (sent straight to anvil): ExpiringNonceHashNotSet", async () => {
      const payer = account("payer7");
      const error = await simulateContract(chain(), {
        account: payer,
        address: RESERVE,
        abi: Abis.tip20ChannelReserve,
        functionName: "open",
        args: [payTo, zeroAddress, USDC_E, raw("0.01"), `0x${"ab".repeat(32)}`, zeroAddress],
      }).catch((err: BaseError) => err);
      expect(error).toBeInstanceOf(BaseError);
      const reverted = (error as BaseError).walk((e) => e instanceof ContractFunctionRevertedError);
      expect((reverted as ContractFunctionRevertedError | null)?.data?.errorName).toBe(
        "ExpiringNonceHashNotSet",
      );
      expect(await balance(USDC_E, payer.address)).toBe(raw("1000"));
    });
  });

  it("mppx/discovery turns the composed route into x-payment-info offers its validator accepts", () => {
    const doc = generateDiscovery(mppx, {
      info: { title: "Tollgate devnet test", version: "1.0.0" },
      serviceInfo: { categories: ["blockchain"], docs: { llms: "/llms.txt", apiReference: "/openapi.json" } },
      routes: [{ method: "get", path: "/dear", handler: composed(PRICES["/dear"]) }],
    });
    expect(validateDiscovery(doc)).toEqual([]);
    const operation = (doc.paths as Record<string, Record<string, Record<string, unknown>>>)["/dear"]?.get;
    expect(operation?.responses).toHaveProperty("402");
    expect(operation?.["x-payment-info"]).toMatchObject({
      offers: [
        { amount: "25000", currency: PATH_USD, intent: "charge", method: "tempo" },
        { amount: "25000", currency: USDC_E, intent: "charge", method: "tempo" },
        { amount: "25000", currency: USDC_E, intent: "session", method: "tempo" },
      ],
    });
    expect(
      validateDiscovery({ ...doc, paths: { "/dear": { get: { "x-payment-info": { amount: "0.025" } } } } }),
    ).toEqual(expect.arrayContaining([expect.objectContaining({ message: "Invalid amount" })]));
  });
});
