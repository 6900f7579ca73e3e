// Every scheme payment-verifier offers, through the one conformance suite (conformance.ts).
import { dirname } from "node:path";
import type { Devnet } from "@tollgate/devnet";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { Challenge } from "mppx";
import { Mppx as MppxClient, tempo as tempoPayer } from "mppx/client";
import { type Address, isAddressEqual } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll } from "vitest";
import type { SchemeName } from "../../services/payment-verifier/src/domain.ts";
import { paymentRequiredResponse, tempoClient, tip20Balance } from "../support/mppx.ts";
import { batchPayer } from "../support/x402-batch.ts";
import { type ConformanceTarget, schemeConformance } from "./conformance.ts";
import {
  challenge,
  cleanUp,
  devnetConfig,
  headerGetter,
  pay,
  payer,
  settlementReader,
  startSettlementDevnet,
  startVerifier,
  uniqueId,
  usdcBalance,
  type VerifierClient,
} from "./support.ts";

let devnet: Devnet;
const namespace = uniqueId("pvconf");
const prefixes: string[] = [];
const outboxDirs: string[] = [];

beforeAll(async () => {
  devnet = await startSettlementDevnet();
});

afterAll(async () => {
  await devnet?.stop();
  if (devnet) outboxDirs.push(dirname(devnet.file));
  await cleanUp({ redisPrefixes: prefixes, namespace, outboxDirs });
});

const x402Offer = (headers: { name: string; value: string }[], scheme: string) => {
  const header = headerGetter(headers)("PAYMENT-REQUIRED");
  if (!header) return undefined;
  const offer = decodePaymentRequiredHeader(header).accepts.find((a) => a.scheme === scheme);
  return offer ? BigInt(offer.amount) : undefined;
};

/** Two replicas sharing Redis, with the configuration's schemes or `schemes`. */
async function replicas(schemes?: SchemeName[]): ReturnType<ConformanceTarget["start"]> {
  const config = { ...devnetConfig(devnet), ...(schemes ? { schemes } : {}) };
  prefixes.push(config.redisPrefix);
  const other = devnetConfig(devnet);
  outboxDirs.push(config.outboxDir, other.outboxDir);
  const a = await startVerifier(config, { eventsNamespace: namespace });
  const b = await startVerifier({ ...config, outboxDir: other.outboxDir }, { eventsNamespace: namespace });
  return {
    a: a.client,
    b: b.client,
    async stop() {
      a.client.close();
      b.client.close();
      await a.handle.stop();
      await b.handle.stop();
    },
  };
}

const exact: ConformanceTarget = {
  scheme: "exact",
  start: () => replicas(),
  offeredPrice: (headers) => x402Offer(headers, "exact"),
  pay: async (client, endpoint) => (await pay(client, payer(devnet, "payer1"), endpoint)).credentials,
  async foreign(client, endpoint) {
    // The official client's exact payload, relabelled as another x402 scheme.
    const { credentials } = await pay(client, payer(devnet, "payer2"), endpoint);
    return credentials.map((h) => {
      const p = JSON.parse(Buffer.from(h.value, "base64").toString());
      p.accepted.scheme = "batch-settlement";
      return { name: h.name, value: Buffer.from(JSON.stringify(p)).toString("base64") };
    });
  },
  received: () => usdcBalance(settlementReader(devnet), devnet, devnet.demo.settlement.payTo),
};

/**
 * x402-batch: the official batch-settlement client pays from a channel opened by its first call
 * (a deposit; the escrow is our own contract at the canonical address). "Money moved" is what the
 * channel accrued, as the core records it: the receiver is paid later, by the settlement worker.
 */
const BATCH_PAYERS = ["payer3", "payer5", "payer6", "payer7"];
let batchPaid = 0;
let lastBatchPayer: ReturnType<typeof batchPayer> | undefined;
let lastBatchPayload: PaymentPayload | undefined;
async function batchCredentials(p: ReturnType<typeof batchPayer>, client: VerifierClient, endpoint: string) {
  const required = p.http.getPaymentRequiredResponse(headerGetter(await challenge(client, endpoint)));
  const payload = await p.client.createPaymentPayload(required);
  lastBatchPayload = payload;
  return Object.entries(p.http.encodePaymentSignatureHeader(payload)).map(([name, value]) => ({
    name,
    value,
  }));
}
const batch: ConformanceTarget = {
  scheme: "x402-batch",
  start: exact.start,
  offeredPrice: (headers) => x402Offer(headers, "batch-settlement"),
  pay(client, endpoint) {
    // A payer (and channel) per payment: one test leaves a verified channel reserved on purpose.
    lastBatchPayer = batchPayer(devnet, BATCH_PAYERS[batchPaid++ % BATCH_PAYERS.length] ?? "payer3");
    return batchCredentials(lastBatchPayer, client, endpoint);
  },
  // The same client's next voucher on the channel its deposit opened: the self-guarded road.
  payAgain(client, endpoint) {
    if (!lastBatchPayer) throw new Error("payAgain before pay");
    return batchCredentials(lastBatchPayer, client, endpoint);
  },
  async foreign(client, endpoint) {
    return (await pay(client, payer(devnet, "payer4"), endpoint)).credentials; // an exact payment
  },
  // A deposit moves the payer's money into the escrow, not to the receiver: no deposit may land
  // for a call that got no answer.
  received: () =>
    usdcBalance(
      settlementReader(devnet),
      devnet,
      devnet.chains.settlement?.contracts.batchSettlement as `0x${string}`,
    ),
  async settled(answer) {
    if (!lastBatchPayer || !lastBatchPayload) throw new Error("settled before pay");
    await lastBatchPayer.http.processPaymentResult(lastBatchPayload, headerGetter(answer), 200);
  },
  // A deposit moves its amount into the escrow; a voucher moves nothing on chain (it accrues).
  moves(credentials) {
    const signature = headerGetter(credentials)("PAYMENT-SIGNATURE") ?? "";
    const { payload } = JSON.parse(Buffer.from(signature, "base64").toString()) as {
      payload: { type: string; deposit?: { amount: string } };
    };
    return payload.type === "deposit" ? BigInt(payload.deposit?.amount ?? "") : 0n;
  },
};

const tempoPayerAccount = (role: string) => {
  const found = devnet.accounts.find((x) => x.role === role);
  if (!found) throw new Error(`no devnet account ${role}`);
  return privateKeyToAccount(found.privateKey);
};
const tempoChainClient = () => tempoClient(devnet.chains.tempo?.anvilRpcUrl ?? "");
const mppOffer = (headers: { name: string; value: string }[], intent: string) => {
  const offer = Challenge.fromResponseList(paymentRequiredResponse(headers)).find((c) => c.intent === intent);
  return offer ? BigInt(offer.request.amount as string) : undefined;
};

/** The official mppx client's credential for the live 402, in the method's intent and currency. */
async function mppCredential(
  client: VerifierClient,
  endpoint: string,
  method: ReturnType<typeof tempoPayer.charge> | ReturnType<typeof tempoPayer.session>,
  currency: Address,
) {
  const payer = MppxClient.create({
    polyfill: false,
    methods: [method],
    orderChallenges: (candidates) =>
      candidates.filter((c) => isAddressEqual(c.challenge.request.currency as Address, currency)),
  });
  const value = await payer.createCredential(paymentRequiredResponse(await challenge(client, endpoint)));
  return [{ name: "Authorization", value }];
}

const SESSION_DEPOSIT_USD = "0.05";
const SESSION_DEPOSIT = 50_000n;

const { pathUsd: PATH_USD, usdce: USDC_E } = {
  pathUsd: "0x20C0000000000000000000000000000000000000",
  usdce: "0x20C000000000000000000000b9537d11c60E8b50",
} as const;

/**
 * MPP charge, pull mode (the client signs a Tempo transfer; payment-verifier broadcasts it only
 * after the node answered). The Tempo chain is anvil's own Tempo mode.
 */
const mppCharge: ConformanceTarget = {
  scheme: "mpp-charge",
  listedAs: "charge",
  standIns: "the devnet's JSON-RPC shim in front of anvil's Tempo mode",
  // MPP beside exact, whose credentials are another protocol's.
  start: () => replicas(["mpp-charge", "mpp-session", "exact"]),
  offeredPrice: (headers) => mppOffer(headers, "charge"),
  pay: (client, endpoint) =>
    mppCredential(
      client,
      endpoint,
      tempoPayer.charge({ account: tempoPayerAccount("payer1"), mode: "pull", getClient: tempoChainClient }),
      USDC_E,
    ),
  foreign: async (client, endpoint) => (await pay(client, payer(devnet, "payer4"), endpoint)).credentials,
  received: () => tip20Balance(devnet.chains.tempo?.anvilRpcUrl ?? "", USDC_E, devnet.demo.tempo.payTo),
};

/**
 * MPP session: each payment opens a fresh USDC.e channel (a deposit into the channel reserve) and
 * pays with the open voucher. Stand-ins: the channel reserve is a contract of ours in place of the
 * TIP-1034 precompile, and the server's RPC goes through the devnet's JSON-RPC shim.
 */
const mppSession: ConformanceTarget = {
  scheme: "mpp-session",
  listedAs: "session",
  standIns: "a channel reserve contract of ours for the TIP-1034 precompile, the devnet's JSON-RPC shim",
  start: () => replicas(["mpp-charge", "mpp-session", "exact"]),
  offeredPrice: (headers) => mppOffer(headers, "session"),
  pay: (client, endpoint) =>
    mppCredential(
      client,
      endpoint,
      tempoPayer.session({
        account: tempoPayerAccount("payer2"),
        getClient: tempoChainClient,
        maxDeposit: SESSION_DEPOSIT_USD,
      }),
      USDC_E,
    ),
  foreign: (client, endpoint) =>
    mppCredential(
      client,
      endpoint,
      tempoPayer.charge({ account: tempoPayerAccount("payer3"), mode: "pull", getClient: tempoChainClient }),
      PATH_USD,
    ),
  // The open moves the deposit into the reserve: none may land for a call that got no answer.
  received: () =>
    tip20Balance(devnet.chains.tempo?.anvilRpcUrl ?? "", USDC_E, devnet.demo.tempo.channelReserve.address),
  // Every payment opens a channel with the client's deposit (maxDeposit above, 6 decimals).
  moves: () => SESSION_DEPOSIT,
};

schemeConformance(exact);
schemeConformance(batch);
schemeConformance(mppCharge);
schemeConformance(mppSession);
