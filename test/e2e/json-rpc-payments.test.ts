// POST /rpc/{network} paid every way the 402 offers, on the shared mesh with the unmodified official
// clients: MPP charge and session (mppx) on the devnet's Tempo chain, and x402-batch (the official
// batch-settlement client through @x402/fetch) on its settlement chain. A body costs the sum of its
// relayed calls' prices (rpcPrice): a node error among them is charged, a call answered here is
// free, and a body refused whole charges nothing, a payment sent with it left unspent. Stand-ins,
// as in mpp.test.ts and x402-batch.test.ts: payment-verifier reaches anvil's Tempo mode through the
// devnet's JSON-RPC shim, the session's channel reserve and the batch escrow are contracts of ours.
import { priceAtomic, rpcPrice } from "@tollgate/catalog";
import { readDevnetFile } from "@tollgate/devnet";
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
} from "@x402/core/http";
import { signVoucher } from "@x402/evm/batch-settlement/client";
import { Challenge, Receipt } from "mppx";
import { type Hex, parseEventLogs, toFunctionSelector } from "viem";
import { getTransactionReceipt } from "viem/actions";
import { Abis } from "viem/tempo";
import { describe, expect, it } from "vitest";
import { mesh } from "../support/gateway.ts";
import { mppChargePayer, mppSessionPayer, tempoChain, tempoClient, tip20Balance } from "../support/mppx.ts";
import { settlementNetwork } from "../support/x402.ts";
import { batchPayer } from "../support/x402-batch.ts";

const devnet = readDevnetFile(mesh.devnetFile);
const URL_ETH = `${mesh.gatewayUrl}/rpc/ethereum`;
const demo = devnet.demo.ethereum;
const A = devnet.accounts.find((a) => a.role === "A")?.address as Hex;
const tempo = tempoChain(devnet);
const USDC_E = devnet.demo.tempo.usdce.address;
const PATH_USD = devnet.demo.tempo.pathUsd.address;
const PAY_TO = devnet.demo.tempo.payTo;
const balance = (token: Hex, owner: Hex) => tip20Balance(tempo.anvilRpcUrl, token, owner);

const call = (id: number | string, method: string, params?: unknown[]) => ({
  jsonrpc: "2.0",
  id,
  method,
  ...(params ? { params } : {}),
});
/** A JSON-RPC body and the methods it is priced by (the relayed ones). */
interface Body {
  name: string;
  body: unknown;
  methods: string[];
  /** What its calls are answered: the node's answers for relayed ones, the endpoint's for the rest. */
  // biome-ignore lint/suspicious/noExplicitAny: a JSON-RPC answer as parsed
  check: (answers: any) => void;
}
const READS: Body = {
  name: "a batch of three reads",
  body: [
    call(1, "eth_blockNumber"),
    call(2, "eth_getBalance", [A, "latest"]),
    call(3, "eth_call", [{ to: demo.reverter.address, data: toFunctionSelector("ok()") }, "latest"]),
  ],
  methods: ["eth_blockNumber", "eth_getBalance", "eth_call"],
  check: (answers) => {
    expect(answers.map((x: { id: number }) => x.id)).toEqual([1, 2, 3]);
    expect(BigInt(answers[2].result)).toBe(42n);
  },
};
const WITH_ERRORS: Body = {
  name: "a batch with a node error and a call not served",
  body: [
    call("a", "eth_chainId"),
    call("b", "eth_call", [
      { to: demo.reverter.address, data: toFunctionSelector("alwaysReverts()") },
      "latest",
    ]),
    call("c", "eth_accounts"),
  ],
  methods: ["eth_chainId", "eth_call"],
  check: (answers) =>
    expect(answers).toMatchObject([
      { id: "a", result: "0x1" },
      { id: "b", error: { code: 3 } },
      { id: "c", error: { code: -32601 } },
    ]),
};
const ONE: Body = {
  name: "one call, not a batch",
  body: call(9, "eth_getLogs", [{ address: demo.erc20.address, fromBlock: "0x0", toBlock: "latest" }]),
  methods: ["eth_getLogs"],
  check: (answers) => {
    expect(answers).toMatchObject({ jsonrpc: "2.0", id: 9 });
    expect(answers.result.length).toBeGreaterThan(0);
  },
};
/** Refused whole (400) before any payment is looked at. */
const REFUSED = [[], Array.from({ length: 101 }, (_, i) => call(i, "eth_chainId"))];
/** Nothing relayable: answered here, free (200). */
const NOTHING_RELAYED = [call(1, "eth_accounts"), call(2, "eth_sendRawTransaction", ["0x00"])];

const priceOf = (b: Body) => priceAtomic(rpcPrice(b.methods));
const post = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(body),
});

/** Checks a paid answer against what its body's calls should get. */
async function checkAnswers(b: Body, res: Response): Promise<void> {
  b.check(await res.json());
}

/** What the 402 for a body asks, per offer: MPP's amounts and x402's. */
async function offered(body: unknown): Promise<{ mpp: string[]; x402: Record<string, string> }> {
  const res = await fetch(URL_ETH, post(body));
  expect(res.status).toBe(402);
  const x402 = decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
  return {
    mpp: Challenge.fromResponseList(res).map((c) => String(c.request.amount)),
    x402: Object.fromEntries(x402.accepts.map((a) => [a.scheme, a.amount])),
  };
}

describe("JSON-RPC bodies paid with MPP charge (official mppx client) — payment-verifier reaches anvil's Tempo mode through the devnet's JSON-RPC shim (a stand-in)", () => {
  it("pays each body exactly the sum of its relayed calls' prices, a node error included: the receipt's transfer and the recipient's balance say so", async () => {
    const payer = mppChargePayer(devnet, "payer1", USDC_E);
    for (const b of [READS, WITH_ERRORS, ONE]) {
      const price = priceOf(b);
      const asked = await offered(b.body);
      expect(asked.mpp, b.name).toEqual([String(price), String(price), String(price)]);
      expect(asked.x402, b.name).toEqual({
        exact: String(price),
        "batch-settlement": String(price),
        "x402-batch": String(price),
      });
      const before = await balance(USDC_E, PAY_TO);
      const res = await payer.fetch(URL_ETH, post(b.body));
      expect(res.status, b.name).toBe(200);
      await checkAnswers(b, res);
      const receipt = Receipt.fromResponse(res);
      expect(receipt).toMatchObject({ method: "tempo", status: "success" });
      const mined = await getTransactionReceipt(tempoClient(tempo.anvilRpcUrl), {
        hash: receipt.reference as Hex,
      });
      const [transfer] = parseEventLogs({ abi: Abis.tip20, logs: mined.logs, eventName: "TransferWithMemo" });
      expect(transfer?.args, b.name).toMatchObject({ to: PAY_TO, amount: price });
      expect(await balance(USDC_E, PAY_TO), b.name).toBe(before + price);
    }
    expect(payer.sent).toHaveLength(3);
  });

  it("charges nothing for a body refused whole or answered here; a credential sent with one stays unspent", async () => {
    const payer = mppChargePayer(devnet, "payer2", PATH_USD);
    const before = await balance(PATH_USD, PAY_TO);
    for (const body of REFUSED) expect((await payer.fetch(URL_ETH, post(body))).status).toBe(400);
    const free = await payer.fetch(URL_ETH, post(NOTHING_RELAYED));
    expect(free.status).toBe(200);
    expect(await free.json()).toMatchObject([{ error: { code: -32601 } }, { error: { code: -32601 } }]);
    expect(payer.sent).toHaveLength(0);

    // A credential for READS, sent with bodies that are refused or need no node: nothing taken.
    const credential = await payer.client.createCredential(await fetch(URL_ETH, post(READS.body)));
    for (const body of REFUSED)
      expect((await fetch(URL_ETH, post(body, { authorization: credential }))).status).toBe(400);
    const freeAgain = await fetch(URL_ETH, post(NOTHING_RELAYED, { authorization: credential }));
    expect(freeAgain.status).toBe(200);
    expect(freeAgain.headers.get("payment-receipt")).toBeNull();
    expect(await balance(PATH_USD, PAY_TO)).toBe(before);
    // It still pays for the body it was made for, exactly its price.
    const own = await fetch(URL_ETH, post(READS.body, { authorization: credential }));
    expect(own.status).toBe(200);
    await checkAnswers(READS, own);
    expect(await balance(PATH_USD, PAY_TO)).toBe(before + priceOf(READS));
  });
});

describe("JSON-RPC bodies paid with an MPP session (official session manager) — channel reserve: a contract of ours standing in for the TIP-1034 precompile; payment-verifier's RPC through the devnet's shim", () => {
  it("each body's voucher spends its price, a refused body nothing; a top-up and the close posted to /rpc are taken, the close settling exactly the sum", async () => {
    const { manager } = mppSessionPayer(devnet, "payer7", "0.1");
    const payToBefore = await balance(USDC_E, PAY_TO);
    let spent = 0n;
    for (const b of [READS, WITH_ERRORS, ONE]) {
      const res = await manager.fetch(URL_ETH, post(b.body));
      expect(res.status, b.name).toBe(200);
      await checkAnswers(b, res);
      spent += priceOf(b);
      expect(res.receipt, b.name).toMatchObject({ intent: "session", spent: String(spent) });
    }
    for (const body of REFUSED) expect((await manager.fetch(URL_ETH, post(body))).status).toBe(400);
    // A top-up, posted to /rpc as the close is: taken, charging nothing.
    expect((await manager.topUp("0.05"))?.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    const again = await manager.fetch(URL_ETH, post(READS.body));
    expect(again.status).toBe(200);
    spent += priceOf(READS);
    expect(again.receipt).toMatchObject({ intent: "session", spent: String(spent) });

    const closed = await manager.close();
    expect(closed).toMatchObject({ intent: "session", spent: String(spent) });
    expect(await balance(USDC_E, PAY_TO)).toBe(payToBefore + spent);
  });
});

describe("JSON-RPC bodies paid with x402-batch (official batch-settlement client) — escrow and collector: contracts of ours at the canonical addresses", () => {
  const NETWORK = settlementNetwork(devnet);
  /** The cumulative amount of the last voucher the client sent. */
  const cumulative = (signatures: string[]) =>
    BigInt(
      (
        decodePaymentSignatureHeader(signatures.at(-1) ?? "").payload as {
          voucher: { maxClaimableAmount: string };
        }
      ).voucher.maxClaimableAmount,
    );

  it("each body's voucher rises by exactly its price, a node error included; the receipt charges it", async () => {
    const payer = batchPayer(devnet, "payer3");
    // The payer's channel may carry other suites' calls: the first call settles where it stands.
    expect((await payer.fetch(URL_ETH, post(READS.body))).status).toBe(200);
    for (const b of [READS, WITH_ERRORS, ONE]) {
      const from = cumulative(payer.signatures);
      const sent = payer.signatures.length;
      const res = await payer.fetch(URL_ETH, post(b.body));
      expect(res.status, b.name).toBe(200);
      await checkAnswers(b, res);
      const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
      expect(receipt.success).toBe(true);
      expect((receipt.extra as { chargedAmount?: string }).chargedAmount, b.name).toBe(String(priceOf(b)));
      // One voucher for the call, its cumulative up by the body's price.
      expect(payer.signatures.length - sent, b.name).toBe(1);
      expect(cumulative(payer.signatures) - from, b.name).toBe(priceOf(b));
    }
  });

  it("a refused body or one answered here takes nothing from the channel, a voucher sent with it included", async () => {
    const payer = batchPayer(devnet, "payer4");
    // Two calls: the last one sent is a voucher (a channel's first is its deposit).
    for (let i = 0; i < 2; i++) expect((await payer.fetch(URL_ETH, post(READS.body))).status).toBe(200);
    const sent = payer.signatures.length;
    for (const body of REFUSED) expect((await payer.fetch(URL_ETH, post(body))).status).toBe(400);
    expect((await payer.fetch(URL_ETH, post(NOTHING_RELAYED))).status).toBe(200);
    expect(payer.signatures).toHaveLength(sent);

    // The next voucher for READS, by hand, sent first with bodies that are refused or need no node.
    const last = decodePaymentSignatureHeader(payer.signatures.at(-1) ?? "");
    const channelId = (last.payload as { voucher: { channelId: Hex } }).voucher.channelId;
    const next = cumulative(payer.signatures) + priceOf(READS);
    const voucher = await signVoucher(payer.account, channelId, String(next), NETWORK);
    const header = Buffer.from(
      JSON.stringify({ ...last, payload: { ...(last.payload as object), voucher } }),
    ).toString("base64");
    for (const body of REFUSED)
      expect((await fetch(URL_ETH, post(body, { "payment-signature": header }))).status).toBe(400);
    const free = await fetch(URL_ETH, post(NOTHING_RELAYED, { "payment-signature": header }));
    expect(free.status).toBe(200);
    expect(free.headers.get("payment-response")).toBeNull();
    // The channel took nothing: the voucher still pays for READS, charging exactly its price.
    const own = await fetch(URL_ETH, post(READS.body, { "payment-signature": header }));
    const answers = await own.json();
    expect(own.status, JSON.stringify(answers)).toBe(200);
    READS.check(answers);
    const receipt = decodePaymentResponseHeader(own.headers.get("payment-response") ?? "");
    expect((receipt.extra as { chargedAmount?: string }).chargedAmount).toBe(String(priceOf(READS)));
  });
});
