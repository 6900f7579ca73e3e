// The fixture of the x402 `exact` suites (x402-exact.test.ts, x402-exact-failures.test.ts): a
// settlement devnet, payment-verifier offering exact alone, eight funded payers, and the
// settlement events a suite caused. Each suite file calls `useExactVerifier()` once, at its top:
// it starts its own devnet and verifier, so each file's metrics and stream are its own.
import { dirname } from "node:path";
import type { Devnet } from "@tollgate/devnet";
import type { PublicClient } from "viem";
import { afterAll, beforeAll, expect } from "vitest";
import type { SettlementEventV2 } from "../../libs/events/src/index.ts";
import type { PaymentVerifierConfig } from "../../services/payment-verifier/src/config.ts";
import type { PaymentVerifierHandle } from "../../services/payment-verifier/src/server.ts";
import {
  cleanUp,
  devnetConfig,
  type Payer,
  pay,
  payer,
  settle,
  settlementReader,
  startSettlementDevnet,
  startVerifier,
  uniqueId,
  usdcBalance,
  type VerifierClient,
  verify,
} from "./support.ts";

export let devnet: Devnet;
export let config: PaymentVerifierConfig;
export let verifier: PaymentVerifierHandle;
export let client: VerifierClient;
export let chain: PublicClient;
export let payers: Payer[];
export const namespace = uniqueId("pvtest");

/** Settlement outcomes this suite caused, to find in the stream: `${request id}:${outcome}` → outcome. */
export const expectedEvents = new Map<string, SettlementEventV2["outcome"]>();

/** Starts the devnet and the verifier before the file's tests, and stops them after. */
export function useExactVerifier() {
  beforeAll(async () => {
    devnet = await startSettlementDevnet();
    // This suite is about exact alone (x402-batch has its own): one offer, one method.
    config = devnetConfig(devnet, { schemes: ["exact"] });
    ({ handle: verifier, client } = await startVerifier(config, { eventsNamespace: namespace }));
    chain = settlementReader(devnet);
    payers = Array.from({ length: 8 }, (_, i) => payer(devnet, `payer${i + 1}`));
  });

  afterAll(async () => {
    client?.close();
    await verifier?.stop();
    await devnet?.stop();
    if (config)
      await cleanUp({
        redisPrefixes: [config.redisPrefix],
        namespace,
        outboxDirs: [config.outboxDir, dirname(devnet.file)],
      });
  });
}

export const payTo = () => config.x402.payTo;
export const balances = async (...who: `0x${string}`[]) =>
  Promise.all(who.map((a) => usdcBalance(chain, devnet, a)));

export async function payVerifySettle(p: Payer, endpoint: string) {
  const { credentials } = await pay(client, p, endpoint);
  const v = await verify(client, endpoint, credentials);
  expect(v.valid, v.reason).toBe(true);
  const s = await settle(client, endpoint, credentials, v.paymentId, v.requestId);
  if (s.settled) expectedEvents.set(`${v.requestId}:settled`, "settled");
  return { credentials, v, s };
}
