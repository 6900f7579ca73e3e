// payment-verifier, x402 `exact` with the in-process facilitator: Verify simulates the transfer with
// the settlement transaction's own fill (gas and fees, kept in the process for its Settle), or, within
// a second of a fill, with one eth_call under that fill's gas limit; Settle then simulates it once more beside the signer
// lock's nonce, signs, sends and reads the receipt. What the facilitator asks the settlement chain is
// counted at a recording proxy in front of the devnet's anvil (real chain, real Redis and NATS,
// payloads from the official x402 client).
import { dirname } from "node:path";
import type { Devnet } from "@tollgate/devnet";
import { resetAssetContractCache } from "@x402/evm";
import type { PublicClient } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PREPARED_FEES_TTL_MS } from "../../libs/payment-rails/src/facilitator/prepared-fees.ts";
import type { PaymentVerifierConfig } from "../../services/payment-verifier/src/config.ts";
import type { PaymentVerifierHandle } from "../../services/payment-verifier/src/server.ts";
import { CountingProxy } from "../support/counting-proxy.ts";
import { nodeRpc } from "../support/node-rpc.ts";
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
let proxy: CountingProxy;
let config: PaymentVerifierConfig;
let verifier: PaymentVerifierHandle;
let client: VerifierClient;
let chain: PublicClient;
let payers: Payer[];
const namespace = uniqueId("pvprep");

/** What fills a transaction's gas or fees: none of it may happen at Settle while the fields are fresh. */
const PREPARING = ["eth_fillTransaction", "eth_estimateGas", "eth_maxPriorityFeePerGas", "eth_feeHistory"];

beforeAll(async () => {
  // @x402/evm remembers, process-wide for 15 minutes, which tokens it found to be contracts; the
  // component files of a worker share one process, so an earlier file's verify would hide the token's
  // code read this file counts.
  resetAssetContractCache();
  devnet = await startSettlementDevnet();
  proxy = await new CountingProxy(devnet.chains.settlement?.rpcUrl ?? "").listen();
  const base = devnetConfig(devnet, { schemes: ["exact"] });
  const facilitator = base.x402.facilitator;
  if (facilitator.mode !== "local") throw new Error("the devnet config's facilitator is in-process");
  // The facilitator's chain calls go through the proxy; the scheme's own reads go to anvil directly.
  config = { ...base, x402: { ...base.x402, facilitator: { ...facilitator, rpcUrl: proxy.url("/") } } };
  ({ handle: verifier, client } = await startVerifier(config, { eventsNamespace: namespace }));
  chain = settlementReader(devnet);
  payers = [
    payer(devnet, "payer1"),
    payer(devnet, "payer2"),
    payer(devnet, "payer3"),
    payer(devnet, "payer4"),
  ];
}, 120_000);

afterAll(async () => {
  client?.close();
  await verifier?.stop();
  await proxy?.close();
  await devnet?.stop();
  await cleanUp({
    redisPrefixes: [config.redisPrefix],
    namespace,
    outboxDirs: [config.outboxDir, dirname(devnet.file)],
  });
});

/** The JSON-RPC methods (and HTTP requests) the facilitator sent to the settlement chain while `run` ran. */
async function methodsDuring<T>(
  run: () => Promise<T>,
): Promise<{ result: T; methods: string[]; requests: string[][] }> {
  const from = proxy.requests.length;
  const result = await run();
  const sent = proxy.requests.slice(from);
  return { result, methods: sent.flatMap((r) => r.methods), requests: sent.map((r) => r.methods) };
}

const payTo = () => usdcBalance(chain, devnet, devnet.demo.settlement.payTo);

const rpc = (method: string, params: unknown[]) =>
  nodeRpc(devnet.chains.settlement?.rpcUrl ?? "", method, params);

describe("a paid call's settlement-chain round trips", () => {
  it("Verify simulates with the settlement's fill, the next payment with one eth_call under its gas limit; Settle sends without estimating, and the price moves", async () => {
    const p = payers[0] as Payer;
    const first = (await pay(client, p, BLOCK_NUMBER)).credentials;
    const second = (await pay(client, p, BLOCK_NUMBER)).credentials;
    const before = await payTo();

    const v1 = await methodsDuring(() => verify(client, BLOCK_NUMBER, first));
    expect(v1.result.valid).toBe(true);
    // The fill was the simulation; the payer's balance (an eth_call of balanceOf) rode in the same
    // HTTP request as the first code read (the payer's; the library reads the token's too): as many
    // round trips as without it.
    expect(v1.requests.map((r) => [...r].sort().join("+")).sort()).toEqual([
      "eth_call+eth_getCode",
      "eth_fillTransaction",
      "eth_getCode",
    ]);
    // Right after that fill, the same payer: no code read (known plain), no fill; the simulation and
    // the balance in one request.
    const v2 = await methodsDuring(() => verify(client, BLOCK_NUMBER, second));
    expect(v2.result.valid).toBe(true);
    expect(v2.requests).toEqual([["eth_call", "eth_call"]]);

    const s1 = await methodsDuring(() =>
      settle(client, BLOCK_NUMBER, first, v1.result.paymentId, v1.result.requestId),
    );
    expect(s1.result.settled).toBe(true);
    expect(s1.methods.filter((m) => PREPARING.includes(m))).toEqual([]);
    // The transfer simulated once more just before it is sent (beside the signer lock's round trip):
    // a payment its payer undid since Verify is not sent.
    expect(s1.methods[0]).toBe("eth_call");
    // One send, and the receipt read at once (the devnet mines as it receives).
    // One send, then the receipt: read once when the chain has mined it by then, more often when a
    // loaded machine's node is slower to (the full suite's load: two reads).
    const sending = (methods: string[]) => {
      const sent = methods.filter(
        (m) => m.startsWith("eth_sendRawTransaction") || m === "eth_getTransactionReceipt",
      );
      const reads = sent.slice(1);
      expect(reads.length).toBeGreaterThanOrEqual(1);
      expect(new Set(reads)).toEqual(new Set(["eth_getTransactionReceipt"]));
      return [sent[0], reads[0]];
    };
    expect(sending(s1.methods)).toEqual(["eth_sendRawTransaction", "eth_getTransactionReceipt"]);
    const s2 = await methodsDuring(() =>
      settle(client, BLOCK_NUMBER, second, v2.result.paymentId, v2.result.requestId),
    );
    expect(s2.result.settled).toBe(true);
    expect(s2.methods.filter((m) => PREPARING.includes(m))).toEqual([]);
    expect(sending(s2.methods)).toEqual(["eth_sendRawTransaction", "eth_getTransactionReceipt"]);
    const receipt = await chain.getTransactionReceipt({ hash: s2.result.transaction as `0x${string}` });
    expect(receipt.status).toBe("success");
    expect((await payTo()) - before).toBe(2n * priceOf(BLOCK_NUMBER));
  });

  it(`reads gas and fees again under the signer lock once older than ${PREPARED_FEES_TTL_MS} ms, and the call still settles`, async () => {
    const p = payers[1] as Payer;
    const { credentials } = await pay(client, p, BLOCK_NUMBER);
    const before = await payTo();
    const v = await verify(client, BLOCK_NUMBER, credentials);
    expect(v.valid).toBe(true);
    // time-based: the prepared fees' time to live must pass (the case under test); they live in the
    // verifier's memory with no clock to inject and nothing to read.
    await new Promise((r) => setTimeout(r, PREPARED_FEES_TTL_MS + 200));
    const settled = await methodsDuring(() =>
      settle(client, BLOCK_NUMBER, credentials, v.paymentId, v.requestId),
    );
    expect(settled.result.settled).toBe(true);
    expect(settled.methods).toContain("eth_fillTransaction");
    expect((await payTo()) - before).toBe(priceOf(BLOCK_NUMBER));
  });

  it("reads them again when the node refuses the prepared fee (the base fee rose past it), with the same nonce, and the call still settles", async () => {
    const p = payers[2] as Payer;
    const { credentials } = await pay(client, p, BLOCK_NUMBER);
    const before = await payTo();
    const v = await verify(client, BLOCK_NUMBER, credentials);
    expect(v.valid).toBe(true);
    // 1,000 gwei from the next block on: far above any fee read at Verify on the devnet.
    const baseFee = 1_000_000_000_000n;
    await rpc("anvil_setNextBlockBaseFeePerGas", [`0x${baseFee.toString(16)}`]);
    await rpc("evm_mine", []);
    const settled = await methodsDuring(() =>
      settle(client, BLOCK_NUMBER, credentials, v.paymentId, v.requestId),
    );
    expect(settled.result.settled).toBe(true);
    // The prepared send was refused, the fields read again, and the same nonce sent once more.
    expect(settled.methods.filter((m) => m === "eth_sendRawTransaction")).toHaveLength(2);
    expect(settled.methods).toContain("eth_fillTransaction");
    const tx = await chain.getTransaction({ hash: settled.result.transaction as `0x${string}` });
    expect(tx.maxFeePerGas ?? 0n).toBeGreaterThanOrEqual(baseFee / 2n);
    expect((await payTo()) - before).toBe(priceOf(BLOCK_NUMBER));
  });
});
