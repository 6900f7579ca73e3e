// x402's payment-identifier extension (issue 31, part 5), on a mesh of its own paid with the
// official clients (@x402/fetch, and @x402/extensions' payment-identifier helper hooked in as its
// docs show): a retry of a paid request with the same identifier and the same payment (the same
// PAYMENT-SIGNATURE, as a client whose answer was lost sends it again) gets the first answer again,
// with no second node call and no second charge; another payment with the identifier is 409; an
// answer over the bound, or a call that was not charged, keeps nothing. rpc-proxy's ethereum
// upstream is a counting proxy in front of the shared devnet's node, so every node call is seen.
import { readFileSync } from "node:fs";
import { priceAtomic } from "@tollgate/catalog";
import type { DevnetFile } from "@tollgate/devnet";
import type { Mesh } from "@tollgate/local";
import { upstreamsEnvName } from "@tollgate/rpc-proxy";
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader } from "@x402/core/http";
import { signVoucher } from "@x402/evm/batch-settlement/client";
import {
  appendPaymentIdentifierToExtensions,
  declarePaymentIdentifierExtension,
  generatePaymentId,
  PAYMENT_IDENTIFIER,
} from "@x402/extensions/payment-identifier";
import { decodePaymentResponseHeader } from "@x402/fetch";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CountingProxy } from "../support/counting-proxy.ts";
import { sharedSettlementEnv } from "../support/devnet.ts";
import { eventually, sleep, until } from "../support/eventually.ts";
import { metricSumAt } from "../support/gateway.ts";
import { assertConforms } from "../support/openapi.ts";
import { startOwnMesh } from "../support/own-mesh.ts";
import {
  type Address,
  settlementClient,
  settlementNetwork,
  signPayment,
  usdcBalance,
  type X402Payer,
  x402Payer,
} from "../support/x402.ts";
import { batchPayer } from "../support/x402-batch.ts";

const devnet = JSON.parse(readFileSync(inject("mesh").devnetFile, "utf8")) as DevnetFile;
const { erc20 } = devnet.demo.ethereum;
const holder = Object.keys(erc20.balances)[0] as Address;
/** One Multicall3 eth_call per call: the node calls this file counts. */
const BALANCE = `/api/chain/erc20-balance?address=${holder}&contract=${erc20.address}`;
/** An eth_getLogs answer over MAX_ANSWER_BYTES (the demo token's seeded transfers). */
const TRANSFERS = `/api/chain/erc20-transfers?contract=${erc20.address}&from_block=0`;
const MAX_ANSWER_BYTES = 1_024;
const PRICE = priceAtomic("0.003", devnet.demo.settlement.usdc.decimals);
const PAY_TO = devnet.demo.settlement.payTo as Address;

let mesh: Mesh;
let node: CountingProxy;
const chain = settlementClient(devnet);
const balance = (owner: Address) => usdcBalance(chain, devnet, owner);

beforeAll(async () => {
  const target = devnet.chains.ethereum?.rpcUrl;
  if (!target) throw new Error("the devnet has no ethereum chain");
  node = await new CountingProxy(target).listen();
  mesh = await startOwnMesh({
    stateDir: inject("mesh").stateDir,
    namespace: `payid${process.pid}`,
    onLine: (s, l) => process.env.MESH_LOGS && process.stderr.write(`[${s}] ${l}\n`),
    env: { LOG_LEVEL: "warn", [upstreamsEnvName("ethereum")]: node.url() },
    serviceEnv: {
      gateway: { EXECUTE_DEADLINE_MS: "3000" },
      // A node that refuses this file's calls must not take the node out of service for the next test.
      "rpc-proxy": { UPSTREAM_BREAKER_THRESHOLD: "1000" },
      "payment-verifier": {
        ...sharedSettlementEnv("spare5"),
        PAYMENT_IDENTIFIER_MAX_ANSWER_BYTES: String(MAX_ANSWER_BYTES),
      },
    },
  });
});

afterAll(async () => {
  await mesh?.stop();
  await node?.close();
});

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/** The node's calls of `method` so far. */
const nodeCalls = (method: string) => node.requests.filter((r) => r.methods.includes(method)).length;

/** A payer whose payments all carry the identifier `id` (the official client's hook). */
function payerWith(role: string, id: () => string): X402Payer {
  return x402Payer(devnet, role, { paymentId: id });
}

/** A request sent with a payment the client signed before (the same PAYMENT-SIGNATURE again). */
async function again(path: string, signature: string): Promise<Answer> {
  const res = await fetch(`${mesh.gatewayUrl}${path}`, { headers: { "PAYMENT-SIGNATURE": signature } });
  const answer = { status: res.status, headers: res.headers, text: await res.text() };
  // Every answer, a first one given again and the 409s included, is one /openapi.json documents.
  await assertConforms("get", path.split("?")[0] ?? path, {
    status: answer.status,
    headers: Object.fromEntries(res.headers),
    body: JSON.parse(answer.text),
  } as never);
  return answer;
}

/** Sent again after Retry-After while the first request's answer is being kept: what a client does. */
async function againAfterProgress(path: string, signature: string): Promise<Answer> {
  for (let i = 0; i < 20; i++) {
    const answer = await again(path, signature);
    if (answer.status !== 409 || !answer.text.includes("payment_identifier_in_progress")) return answer;
    // time-based: paces the client by the answer's Retry-After (scaled down), as a client does.
    await sleep(Number(answer.headers.get("retry-after")) * 100);
  }
  throw new Error("the first answer was never kept");
}

/** A paid call through the official fetch; the PAYMENT-SIGNATURE it sent. */
async function payOnce(payer: X402Payer, path: string): Promise<Answer & { signature: string }> {
  const sent = payer.paid.length;
  const res = await payer.fetch(`${mesh.gatewayUrl}${path}`);
  const signature = payer.paid[sent]?.signature ?? "";
  expect(payer.paid.length).toBe(sent + 1);
  return { status: res.status, headers: res.headers, text: await res.text(), signature };
}

const pvMetric = (outcome: string) =>
  metricSumAt(
    `http://127.0.0.1:${mesh.ports["payment-verifier"].metrics}/metrics`,
    "payment_identifier_answers_total",
    {
      outcome,
    },
  );

describe("x402 payment-identifier: a paid retry is answered once, charged once", () => {
  it("declares the extension, optional, in every 402's PAYMENT-REQUIRED", async () => {
    const res = await fetch(`${mesh.gatewayUrl}${BALANCE}`);
    expect(res.status).toBe(402);
    const offer = decodePaymentRequiredHeader(res.headers.get("payment-required") ?? "");
    expect(offer.extensions?.[PAYMENT_IDENTIFIER]).toEqual(declarePaymentIdentifierExtension(false));
  });

  it("gives a retry of the same payment the first answer, its receipt, no node call and no charge", async () => {
    const id = generatePaymentId();
    const payer = payerWith("payer6", () => id);
    const before = { payer: await balance(payer.address), payTo: await balance(PAY_TO) };
    const calls = nodeCalls("eth_call");

    const first = await payOnce(payer, BALANCE);
    expect(first.status, first.text).toBe(200);
    const receipt = decodePaymentResponseHeader(first.headers.get("payment-response") ?? "");
    expect(receipt).toMatchObject({ success: true, payer: payer.address });

    const retries = [await againAfterProgress(BALANCE, first.signature)];
    retries.push(...(await Promise.all(Array.from({ length: 5 }, () => again(BALANCE, first.signature)))));
    for (const retry of retries) {
      expect(retry.status).toBe(200);
      expect(retry.text).toBe(first.text);
      expect(retry.headers.get("payment-response")).toBe(first.headers.get("payment-response"));
      // A request of its own (its own id in the header), answered with the first one's body.
      expect(retry.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
    }
    expect(nodeCalls("eth_call") - calls).toBe(1);
    expect(await balance(payer.address)).toBe(before.payer - PRICE);
    expect(await balance(PAY_TO)).toBe(before.payTo + PRICE);
    expect(await pvMetric("replayed")).toBeGreaterThanOrEqual(6);
  });

  it("answers the same identifier with another payment 409 payment_identifier_conflict, charging nothing", async () => {
    const id = generatePaymentId();
    const payer = payerWith("payer6", () => id);
    const first = await payOnce(payer, BALANCE);
    expect(first.status, first.text).toBe(200);
    const before = { payer: await balance(payer.address), payTo: await balance(PAY_TO) };
    const calls = nodeCalls("eth_call");

    // The official client signs a new authorization (a new nonce) with the same identifier.
    const second = await payOnce(payer, BALANCE);
    expect(second.signature).not.toBe(first.signature);
    expect(second.status, second.text).toBe(409);
    expect(JSON.parse(second.text)).toMatchObject({
      data: null,
      error: { code: "payment_identifier_conflict" },
    });
    expect(second.headers.get("payment-response")).toBeNull();
    expect(nodeCalls("eth_call") - calls).toBe(0);
    expect(await balance(payer.address)).toBe(before.payer);
    expect(await balance(PAY_TO)).toBe(before.payTo);
    // The first answer is still the identifier's.
    expect((await againAfterProgress(BALANCE, first.signature)).text).toBe(first.text);
  });

  it("answers the same payment and identifier with another JSON-RPC body 409 payment_identifier_conflict; the same body gets the first answer (issue 40, finding 5)", async () => {
    const id = generatePaymentId();
    const payer = payerWith("payer6", () => id);
    const url = `${mesh.gatewayUrl}/rpc/ethereum`;
    // The same method (so the same price and resource name), two addresses: two requests.
    const bodyOf = (address: string) =>
      JSON.stringify({ jsonrpc: "2.0", id: 7, method: "eth_getBalance", params: [address, "latest"] });
    const [a, b] = [bodyOf(holder), bodyOf(PAY_TO)];
    const post = (body: string, signature?: string) =>
      fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(signature ? { "PAYMENT-SIGNATURE": signature } : {}),
        },
        body,
      }).then(async (res) => ({ status: res.status, headers: res.headers, text: await res.text() }));
    const sent = payer.paid.length;
    const res = await payer.fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: a,
    });
    const first = { status: res.status, headers: res.headers, text: await res.text() };
    expect(first.status, first.text).toBe(200);
    const signature = payer.paid[sent]?.signature ?? "";
    expect(JSON.parse(first.text)).toMatchObject({ id: 7, result: expect.stringMatching(/^0x/) });
    const before = { payer: await balance(payer.address), payTo: await balance(PAY_TO) };
    const calls = nodeCalls("eth_getBalance");

    // The same payment and identifier with body B: a conflict, not body A's answer.
    const other = await eventually(
      () => post(b, signature),
      (a) => !a.text.includes("payment_identifier_in_progress"),
      30_000,
      100,
    );
    expect(other.status, other.text).toBe(409);
    expect(JSON.parse(other.text)).toMatchObject({
      id: 7,
      error: { data: { code: "payment_identifier_conflict" } },
    });
    expect(other.headers.get("payment-response")).toBeNull();
    // Body A again, byte for byte: its first answer, as before.
    const retry = await post(a, signature);
    expect(retry.status, retry.text).toBe(200);
    expect(retry.text).toBe(first.text);
    expect(retry.headers.get("payment-response")).toBe(first.headers.get("payment-response"));
    expect(nodeCalls("eth_getBalance") - calls).toBe(0);
    expect(await balance(payer.address)).toBe(before.payer);
    expect(await balance(PAY_TO)).toBe(before.payTo);
  });

  it("answers a retry while the first request is served 409 in progress with Retry-After, then the answer", async () => {
    const id = generatePaymentId();
    const payer = payerWith("payer6", () => id);
    const before = await balance(PAY_TO);
    const signature = await signPayment(payer, `${mesh.gatewayUrl}${BALANCE}`);
    node.holdOnly = ["eth_call"];
    node.mode = "hold";
    const calls = nodeCalls("eth_call");
    const sent = again(BALANCE, signature);
    try {
      await until("the call reached the node", () => nodeCalls("eth_call") !== calls, 30_000, 20);
      const during = await again(BALANCE, signature);
      expect(during.status, during.text).toBe(409);
      expect(during.headers.get("retry-after")).toBe("1");
      expect(JSON.parse(during.text)).toMatchObject({ error: { code: "payment_identifier_in_progress" } });
      expect(during.headers.get("payment-response")).toBeNull();
    } finally {
      node.release();
      node.holdOnly = undefined;
    }
    const first = await sent;
    expect(first.status, first.text).toBe(200);
    const after = await againAfterProgress(BALANCE, signature);
    expect(after.status).toBe(200);
    expect(after.text).toBe(first.text);
    expect(after.headers.get("payment-response")).toBe(first.headers.get("payment-response"));
    expect(nodeCalls("eth_call") - calls).toBe(1);
    expect(await balance(PAY_TO)).toBe(before + PRICE);
  });

  it("keeps nothing of an uncharged first attempt: the retry is served and charged as a new call", async () => {
    const id = generatePaymentId();
    const payer = payerWith("payer6", () => id);
    const before = await balance(PAY_TO);
    // The node refuses this file's calls as a throttling provider does: a 5xx, nothing charged.
    node.refuse = ({ method }) =>
      method === "eth_call" ? { code: -32005, message: "rate limit exceeded, too many requests" } : undefined;
    let first: Answer & { signature: string };
    try {
      first = await payOnce(payer, BALANCE);
    } finally {
      node.refuse = undefined;
    }
    expect(first.status, first.text).toBeGreaterThanOrEqual(500);
    expect(first.headers.get("payment-response")).toBeNull();
    expect(await balance(PAY_TO)).toBe(before);

    const calls = nodeCalls("eth_call");
    const retry = await again(BALANCE, first.signature);
    expect(retry.status, retry.text).toBe(200);
    expect(decodePaymentResponseHeader(retry.headers.get("payment-response") ?? "")).toMatchObject({
      success: true,
      payer: payer.address,
    });
    expect(nodeCalls("eth_call") - calls).toBe(1);
    expect(await balance(PAY_TO)).toBe(before + PRICE);
    // Kept now: a retry of that one gets its answer.
    expect((await againAfterProgress(BALANCE, first.signature)).text).toBe(retry.text);
    expect(nodeCalls("eth_call") - calls).toBe(1);
  });

  it("keeps no answer over the bound: a retry is refused as a used payment (402), not served or charged again", async () => {
    const id = generatePaymentId();
    const payer = payerWith("payer6", () => id);
    const before = await balance(PAY_TO);
    const tooLarge = await pvMetric("too_large");
    const first = await payOnce(payer, TRANSFERS);
    expect(first.status, first.text).toBe(200);
    expect(Buffer.byteLength(first.text)).toBeGreaterThan(MAX_ANSWER_BYTES);
    const afterFirst = await balance(PAY_TO);
    expect(afterFirst - before).toBe(priceAtomic("0.005", devnet.demo.settlement.usdc.decimals));
    await until(
      "payment-verifier counted the answer too large",
      async () => (await pvMetric("too_large")) !== tooLarge,
      30_000,
      20,
    );

    const calls = nodeCalls("eth_getLogs");
    const retry = await again(TRANSFERS, first.signature);
    expect(retry.status, retry.text).toBe(402);
    expect(JSON.parse(retry.text)).toMatchObject({ data: null, error: { code: "payment_invalid" } });
    expect(nodeCalls("eth_getLogs") - calls).toBe(0);
    expect(await balance(PAY_TO)).toBe(afterFirst);
  });

  it("refuses a malformed identifier before any node call, and serves payments without one as always", async () => {
    // The extensions are not signed: a client (or anyone) can send any id; one the extension's
    // format refuses is a refused payment, nothing reserved, no node call.
    const signed = await signPayment(payerWith("payer6", generatePaymentId), `${mesh.gatewayUrl}${BALANCE}`);
    const payload = JSON.parse(Buffer.from(signed, "base64").toString("utf8"));
    payload.extensions[PAYMENT_IDENTIFIER].info.id = "not an id!";
    const before = await balance(PAY_TO);
    const calls = nodeCalls("eth_call");
    const bad = await again(BALANCE, Buffer.from(JSON.stringify(payload)).toString("base64"));
    expect(bad.status, bad.text).toBe(402);
    expect(JSON.parse(bad.text).error.message).toMatch(/payment-identifier extension is malformed/);
    expect(nodeCalls("eth_call") - calls).toBe(0);
    expect(await balance(PAY_TO)).toBe(before);

    // The official client echoes the declaration (no id) in every payment: served as always.
    const plain = x402Payer(devnet, "payer6");
    const res = await plain.fetch(`${mesh.gatewayUrl}${BALANCE}`);
    expect(res.status).toBe(200);
    expect(nodeCalls("eth_call") - calls).toBe(1);
    expect(await balance(PAY_TO)).toBe(before + PRICE);
  });

  it("x402-batch: a retried deposit or voucher gets its first answer, the channel charged once; another voucher with the id is 409", async () => {
    const payer = batchPayer(devnet, "payer7");
    let id = generatePaymentId();
    payer.client.onBeforePaymentCreation(async ({ paymentRequired }) => {
      paymentRequired.extensions ??= {};
      appendPaymentIdentifierToExtensions(paymentRequired.extensions, id);
    });
    const fetchBalance = async () => {
      const res = await payer.fetch(`${mesh.gatewayUrl}${BALANCE}`);
      return { status: res.status, headers: res.headers, text: await res.text() };
    };
    const payerBefore = await balance(payer.address);
    const calls = nodeCalls("eth_call");

    // The deposit (and its first voucher), then the same PAYMENT-SIGNATURE again.
    const deposit = await fetchBalance();
    expect(deposit.status, deposit.text).toBe(200);
    const depositSignature = payer.signatures.at(-1) ?? "";
    const depositAgain = await againAfterProgress(BALANCE, depositSignature);
    expect(depositAgain.status).toBe(200);
    expect(depositAgain.text).toBe(deposit.text);
    expect(depositAgain.headers.get("payment-response")).toBe(deposit.headers.get("payment-response"));
    expect(nodeCalls("eth_call") - calls).toBe(1);
    // One deposit left the payer, whatever the retries.
    const deposited = payerBefore - (await balance(payer.address));
    expect(deposited).toBeGreaterThan(0n);

    // A voucher (a new identifier), then the same voucher again.
    id = generatePaymentId();
    const signed = payer.signatures.length;
    const voucherCall = await fetchBalance();
    expect(voucherCall.status, voucherCall.text).toBe(200);
    // One signature: the client's voucher continued what the channel charged (one price, not two).
    expect(payer.signatures.length).toBe(signed + 1);
    const voucherSignature = payer.signatures.at(-1) ?? "";
    const voucher = (
      decodePaymentSignatureHeader(voucherSignature).payload as {
        voucher: { channelId: `0x${string}`; maxClaimableAmount: string };
      }
    ).voucher;
    expect(BigInt(voucher.maxClaimableAmount)).toBe(2n * PRICE);
    const voucherAgain = await againAfterProgress(BALANCE, voucherSignature);
    expect(voucherAgain.text).toBe(voucherCall.text);
    expect(voucherAgain.headers.get("payment-response")).toBe(voucherCall.headers.get("payment-response"));
    expect(nodeCalls("eth_call") - calls).toBe(2);

    // The next voucher with that identifier: 409, and the channel still at two prices.
    const payload = decodePaymentSignatureHeader(voucherSignature);
    const sendVoucher = async (cumulative: bigint) => {
      const next = await signVoucher(
        payer.account,
        voucher.channelId,
        String(cumulative),
        settlementNetwork(devnet),
      );
      const header = Buffer.from(
        JSON.stringify({ ...payload, payload: { ...(payload.payload as object), voucher: next } }),
      ).toString("base64");
      return again(BALANCE, header);
    };
    const conflict = await sendVoucher(3n * PRICE);
    expect(conflict.status, conflict.text).toBe(409);
    expect(JSON.parse(conflict.text)).toMatchObject({ error: { code: "payment_identifier_conflict" } });
    expect(nodeCalls("eth_call") - calls).toBe(2);
    // The same voucher under a new identifier is served: the conflict charged nothing.
    payload.extensions = { [PAYMENT_IDENTIFIER]: { info: { required: false, id: generatePaymentId() } } };
    const served = await sendVoucher(3n * PRICE);
    expect(served.status, served.text).toBe(200);
    expect(nodeCalls("eth_call") - calls).toBe(3);
    expect(payerBefore - (await balance(payer.address))).toBe(deposited);
  });
});
