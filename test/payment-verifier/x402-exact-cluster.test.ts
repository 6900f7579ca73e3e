// payment-verifier on a Redis Cluster (REDIS_CLUSTER_NODES; the fixture's 6 nodes on loopback): x402
// `exact` payments from the official client, verified and settled on the devnet's settlement chain,
// each payment's reservation, its payer's bucket, penalty and draws in its payer's slot, and the
// client's bucket in its own. What a payer notices: paid once, served once, a replay refused.
import { dirname } from "node:path";
import type { Devnet } from "@tollgate/devnet";
import type { PublicClient } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scanEveryMaster } from "../../libs/platform/src/redis.ts";
import type { PaymentVerifierConfig } from "../../services/payment-verifier/src/config.ts";
import type { PaymentVerifierHandle } from "../../services/payment-verifier/src/server.ts";
import { clusterNodes, testCluster } from "../support/redis-cluster.ts";
import {
  BLOCK_NUMBER,
  cleanUp,
  devnetConfig,
  type Payer,
  pay,
  payer,
  priceOf,
  settle,
  settlementReader,
  startSettlementDevnet,
  startVerifier,
  uniqueId,
  usdcBalance,
  type VerifierClient,
  verify,
} from "./support.ts";

let devnet: Devnet;
let config: PaymentVerifierConfig;
let verifier: PaymentVerifierHandle;
let client: VerifierClient;
let chain: PublicClient;
const namespace = uniqueId("pvcluster");
const prefix = `${uniqueId("test:pvc:")}:`;
const cluster = testCluster(prefix);

beforeAll(async () => {
  devnet = await startSettlementDevnet();
  config = devnetConfig(devnet, {
    schemes: ["exact"],
    redisUrl: "",
    redisClusterNodes: clusterNodes(),
    redisStandIn: false,
    redisPrefix: prefix,
  });
  ({ handle: verifier, client } = await startVerifier(config, { eventsNamespace: namespace }));
  chain = settlementReader(devnet);
}, 120_000);

afterAll(async () => {
  client?.close();
  await verifier?.stop();
  await devnet?.stop();
  await cleanUp({ redisPrefixes: [], namespace, outboxDirs: [config.outboxDir, dirname(devnet.file)] });
});

describe("payment-verifier on a Redis Cluster", () => {
  it("verifies and settles payments of two payers once each, refuses a replay, and the payee is paid exactly their price", async () => {
    const payTo = () => usdcBalance(chain, devnet, devnet.demo.settlement.payTo);
    const before = await payTo();
    const payers = [payer(devnet, "payer1"), payer(devnet, "payer2")] as Payer[];
    const paid: string[] = [];
    for (const p of payers) {
      const { credentials } = await pay(client, p, BLOCK_NUMBER);
      const v = await verify(client, BLOCK_NUMBER, credentials);
      expect(v.valid, v.reason).toBe(true);
      const s = await settle(client, BLOCK_NUMBER, credentials, v.paymentId, v.requestId);
      expect(s.settled, s.reason).toBe(true);
      // The same payment again, for another request: used.
      const replay = await verify(client, BLOCK_NUMBER, credentials);
      expect(replay.valid).toBe(false);
      paid.push(v.paymentId);
    }
    expect(new Set(paid).size).toBe(2);
    expect((await payTo()) - before).toBe(2n * priceOf(BLOCK_NUMBER));
    // Kept in the cluster, each payment under its payer's tag (its replay refused on any replica).
    const kept: string[] = [];
    for await (const keys of scanEveryMaster(cluster(), { MATCH: `${prefix}reservation:*` }))
      kept.push(...keys);
    for (const p of payers)
      expect(
        kept.filter((k) => k.startsWith(`${prefix}reservation:{payer:${p.address.toLowerCase()}}`)),
      ).toHaveLength(1);
  });
});
