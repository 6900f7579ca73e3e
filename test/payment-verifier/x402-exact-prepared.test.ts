// payment-verifier, x402 `exact` with the in-process facilitator: the settlement transaction's gas
// and fees are read while Verify runs and kept with the reservation, so Settle only takes the
// signer lock's nonce, signs, sends and reads the receipt. What Settle asks the settlement chain is
// counted at a recording proxy in front of the devnet's anvil (real chain, real Redis and NATS,
// payloads from the official x402 client).
import { dirname } from "node:path";
import type { Devnet } from "@tollgate/devnet";
import type { PublicClient } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  decodePreparedFees,
  encodePreparedFees,
  PREPARED_FEES_TTL_MS,
} from "../../services/payment-verifier/src/adapters/facilitator.ts";
import type { PaymentVerifierConfig } from "../../services/payment-verifier/src/config.ts";
import type { PaymentVerifierHandle } from "../../services/payment-verifier/src/server.ts";
import { CountingProxy } from "../support/counting-proxy.ts";
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
  devnet = await startSettlementDevnet();
  proxy = await new CountingProxy(devnet.chains.settlement?.rpcUrl ?? "").listen();
  const base = devnetConfig(devnet, { schemes: ["exact"] });
  const facilitator = base.x402.facilitator;
  if (facilitator.mode !== "local") throw new Error("the devnet config's facilitator is in-process");
  // The facilitator's chain calls go through the proxy; the scheme's own reads go to anvil directly.
  config = { ...base, x402: { ...base.x402, facilitator: { ...facilitator, rpcUrl: proxy.url("/") } } };
  ({ handle: verifier, client } = await startVerifier(config, { eventsNamespace: namespace }));
  chain = settlementReader(devnet);
  payers = [payer(devnet, "payer1"), payer(devnet, "payer2"), payer(devnet, "payer3")];
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

/** The JSON-RPC methods the facilitator sent to the settlement chain while `run` ran. */
async function methodsDuring<T>(run: () => Promise<T>): Promise<{ result: T; methods: string[] }> {
  const from = proxy.requests.length;
  const result = await run();
  return { result, methods: proxy.requests.slice(from).flatMap((r) => r.methods) };
}

const payTo = () => usdcBalance(chain, devnet, devnet.demo.settlement.payTo);

async function rpc(method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(devnet.chains.settlement?.rpcUrl ?? "", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(body.error.message);
  return body.result;
}

describe("gas and fees read at Verify", () => {
  it("are read once while Verify runs; Settle then signs and sends without estimating, and the price moves", async () => {
    const p = payers[0] as Payer;
    const { credentials } = await pay(client, p, BLOCK_NUMBER);
    const before = await payTo();
    const verified = await methodsDuring(() => verify(client, BLOCK_NUMBER, credentials));
    expect(verified.result.valid).toBe(true);
    expect(verified.methods.filter((m) => m === "eth_fillTransaction")).toHaveLength(1);

    const settled = await methodsDuring(() =>
      settle(client, BLOCK_NUMBER, credentials, verified.result.paymentId, verified.result.requestId),
    );
    expect(settled.result.settled).toBe(true);
    expect(settled.methods).toContain("eth_sendRawTransaction");
    expect(settled.methods.filter((m) => PREPARING.includes(m))).toEqual([]);
    expect((await payTo()) - before).toBe(priceOf(BLOCK_NUMBER));
  });

  it(`are read again under the signer lock once older than ${PREPARED_FEES_TTL_MS} ms, and the call still settles`, async () => {
    const p = payers[1] as Payer;
    const { credentials } = await pay(client, p, BLOCK_NUMBER);
    const before = await payTo();
    const v = await verify(client, BLOCK_NUMBER, credentials);
    expect(v.valid).toBe(true);
    await new Promise((r) => setTimeout(r, PREPARED_FEES_TTL_MS + 200));
    const settled = await methodsDuring(() =>
      settle(client, BLOCK_NUMBER, credentials, v.paymentId, v.requestId),
    );
    expect(settled.result.settled).toBe(true);
    expect(settled.methods).toContain("eth_fillTransaction");
    expect((await payTo()) - before).toBe(priceOf(BLOCK_NUMBER));
  });

  it("are read again when the node refuses the prepared fee (the base fee rose past it), with the same nonce, and the call still settles", async () => {
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

describe("the hold that carries them", () => {
  it("is used only while fresh, and only when it holds every field a transaction needs", () => {
    const at = 1_000_000;
    const fees = { at, gas: 60_000n, maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000n };
    const hold = encodePreparedFees(fees);
    expect(decodePreparedFees(hold, at + PREPARED_FEES_TTL_MS - 1)).toEqual(fees);
    expect(decodePreparedFees(hold, at + PREPARED_FEES_TTL_MS)).toBeUndefined();
    expect(decodePreparedFees(hold, at - 1)).toBeUndefined(); // read "in the future": another clock
    const legacy = { at, gas: 60_000n, gasPrice: 3_000_000_000n };
    expect(decodePreparedFees(encodePreparedFees(legacy), at)).toEqual(legacy);
    expect(decodePreparedFees("", at)).toBeUndefined();
    expect(decodePreparedFees('fees1:{"at":1000000,"gas":"60000"}', at)).toBeUndefined();
    expect(decodePreparedFees("fees1:{not json", at)).toBeUndefined();
    expect(decodePreparedFees("channel-id-of-another-scheme", at)).toBeUndefined();
  });
});
