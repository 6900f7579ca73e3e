// Every scheme payment-verifier offers, through the one conformance suite (conformance.ts).
import { dirname } from "node:path";
import type { Devnet } from "@tollgate/devnet";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { afterAll, beforeAll } from "vitest";
import { type ConformanceTarget, schemeConformance } from "./conformance.ts";
import {
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

schemeConformance(exact);
