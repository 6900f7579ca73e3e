// The fixture of the Tempo devnet suites (devnet-tempo*.test.ts): a devnet with its Tempo chain, a
// tiny Node HTTP server running the unmodified mppx server (Mppx.create + Store.redis, real Redis
// under its own key prefix) with charge in pathUSD and USDC.e and a USDC.e session on every paid
// route, and the clients and readers the suites pay and check with. Each suite file calls
// `useTempoDevnet()` in its describe: one devnet and server per file.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { byRole, type Devnet, startDevnet, TEMPO_ADDRESSES } from "@tollgate/devnet";
import { Credential, Errors, Receipt } from "mppx";
import { Mppx as MppxClient, tempo as tempoClientMethods } from "mppx/client";
import { Mppx, tempo } from "mppx/server";
import { type Address, type Hex, isAddressEqual, parseEventLogs, parseUnits } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { getTransactionReceipt } from "viem/actions";
import { Abis } from "viem/tempo";
import { afterAll, beforeAll } from "vitest";
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

export const CHAIN_ID = 4217;
export const { pathUsd: PATH_USD, usdce: USDC_E, channelReserve: RESERVE } = TEMPO_ADDRESSES;
/** Two route prices (human units, 6 decimals) and what they are in raw units. */
export const PRICES = { "/cheap": "0.001", "/dear": "0.025" } as const;
export const raw = (price: string) => parseUnits(price, 6);
export const SESSION_DEPOSIT = "0.3";
const SETTLE_EVERY_UNITS = 10;

export type Route = keyof typeof PRICES;

/** The three MPP offers of a paid route: charge in both currencies, session in USDC.e. */
const offersFor = (amount: string) => ({
  chargePathUsd: { amount, currency: PATH_USD, chainId: CHAIN_ID },
  chargeUsdce: { amount, currency: USDC_E, chainId: CHAIN_ID },
  session: { amount, currency: USDC_E, chainId: CHAIN_ID, unitType: "request" },
});

export let devnet: Devnet;
export let tempoUrls: { rpcUrl: string; anvilRpcUrl: string };
let server: Server;
export let base: string;
export let mppx: ReturnType<typeof createMppx>;
export let payTo: Address;
export const secretKey = randomBytes(32).toString("base64");
export const redis = redisClient();
export const prefix = `tollgate-test:mppx:${process.pid}:${Date.now()}:`;
const file = join(tmpdir(), `tollgate-devnet-tempo-${process.pid}.json`);

export const account = (role: string) => {
  const found = devnet.accounts.find((a) => a.role === role);
  if (!found) throw new Error(`no account ${role}`);
  return privateKeyToAccount(found.privateKey);
};
export const balance = (token: Address, owner: Address) => tip20Balance(tempoUrls.anvilRpcUrl, token, owner);
export const chain = () => tempoClient(tempoUrls.anvilRpcUrl);

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

export function composed(amount: string) {
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
export function chargeClient(role: string, currency: Address, mode: "pull" | "push") {
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
export async function sessionPayer(role: string) {
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
export async function storedChannel(
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
export async function reserveEvents<name extends "ChannelOpened" | "Settled" | "ChannelClosed">(
  hash: string | undefined,
  eventName: name,
) {
  const { logs } = await getTransactionReceipt(chain(), { hash: hash as Hex });
  return parseEventLogs({ abi: Abis.tip20ChannelReserve, logs, eventName });
}

/** Transactions mined in (from, to] whose sender is `who`. */
export const transactionsFrom = (who: Address, from: bigint, to: bigint) =>
  transactionsMinedFrom(tempoUrls.anvilRpcUrl, who, from, to);

/** Starts the devnet, Redis and the mppx server before the describe's tests; stops them after. */
export function useTempoDevnet() {
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
}
