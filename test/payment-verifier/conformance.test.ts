// Every scheme payment-verifier offers, through the one conformance suite (conformance.ts).
import { dirname } from "node:path";
import type { Devnet } from "@tollgate/devnet";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { afterAll, beforeAll } from "vitest";
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

const exact: ConformanceTarget = {
  scheme: "exact",
  async start() {
    const config = devnetConfig(devnet);
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
  },
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
const batch: ConformanceTarget = {
  scheme: "x402-batch",
  start: exact.start,
  offeredPrice: (headers) => x402Offer(headers, "batch-settlement"),
  async pay(client, endpoint) {
    // A payer (and channel) per payment: one test leaves a verified channel reserved on purpose.
    const p = batchPayer(devnet, BATCH_PAYERS[batchPaid++ % BATCH_PAYERS.length] ?? "payer3");
    const required = p.http.getPaymentRequiredResponse(headerGetter(await challenge(client, endpoint)));
    const payload = await p.client.createPaymentPayload(required);
    return Object.entries(p.http.encodePaymentSignatureHeader(payload)).map(([name, value]) => ({
      name,
      value,
    }));
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
};

schemeConformance(exact);
schemeConformance(batch);
