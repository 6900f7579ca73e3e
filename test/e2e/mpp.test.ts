// MPP through the whole shared mesh, paid with the unmodified official mppx client (charge and the
// session manager) on the devnet's Tempo chain: anvil's own Tempo mode with pathUSD and USDC.e at
// their real addresses. Stand-ins, named where sessions are tested: the channel reserve is a
// contract of ours at the TIP-1034 precompile's address, and payment-verifier reaches the chain
// through the devnet's JSON-RPC shim (it seeds each open's expiringNonceHash for that contract).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { priceAtomic } from "@tollgate/catalog";
import { readDevnetFile } from "@tollgate/devnet";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { Challenge, Credential, Receipt } from "mppx";
import { type Address, type Hex, numberToHex, parseEventLogs, toFunctionSelector } from "viem";
import { getTransactionReceipt } from "viem/actions";
import { Abis } from "viem/tempo";
import { describe, expect, it } from "vitest";
import { mesh } from "../support/gateway.ts";
import { mppChargePayer, tempoChain, tempoClient, tip20Balance } from "../support/mppx.ts";
import { assertConforms } from "../support/openapi.ts";

const devnet = readDevnetFile(mesh.devnetFile);
const tempo = tempoChain(devnet);
const PATH_USD = devnet.demo.tempo.pathUsd.address;
const USDC_E = devnet.demo.tempo.usdce.address;
const PAY_TO = devnet.demo.tempo.payTo;
const CHAIN = `eip155:${tempo.chainId}`;
const demo = devnet.demo.ethereum;
const A = devnet.accounts.find((a) => a.role === "A")?.address as Address;
const balance = (token: Address, owner: Address) => tip20Balance(tempo.anvilRpcUrl, token, owner);
const chain = () => tempoClient(tempo.anvilRpcUrl);

/** One paid call per catalog price, each with the data the devnet's seeded state gives. */
const CALLS = [
  {
    price: "0.001",
    path: "/api/chain/chain-id",
    check: (data: unknown) => expect(data).toEqual({ chain_id: "0x1", network: "ethereum" }),
  },
  {
    price: "0.003",
    path: `/api/chain/erc20-balance?address=${A}&contract=${demo.erc20.address}`,
    check: (data: { balance: string }) => expect(data.balance).toBe(demo.erc20.balances[A]),
  },
  {
    price: "0.004",
    path: "/api/chain/estimate-gas",
    body: {
      from: demo.estimateGas.from,
      to: demo.estimateGas.to,
      value: numberToHex(BigInt(demo.estimateGas.value)),
    },
    check: (data: unknown) => expect(data).toEqual({ gas_estimate: "0x5208" }),
  },
  {
    price: "0.005",
    path: "/api/chain/call",
    body: { to: demo.reverter.address, data: toFunctionSelector("ok()") },
    check: (data: { result: string }) => expect(BigInt(data.result)).toBe(42n),
  },
  {
    price: "0.008",
    path: `/api/chain/erc721-tokens?contract=${demo.erc721.address}&address=${A}`,
    check: (data: { tokens: string[] }) => expect(data.tokens).toEqual(demo.erc721.owners[A]),
  },
] as const;

interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: checked against /openapi.json by assertConforms
  body: any;
}

/** Reads an answer and checks it against the gateway's own /openapi.json. */
async function answer(res: Response, method: string, path: string): Promise<Answer> {
  const body = res.status === 204 ? null : await res.json();
  if (body !== null) {
    await assertConforms(method, path.split("?")[0] ?? path, {
      status: res.status,
      headers: Object.fromEntries(res.headers),
      body,
    } as never);
  }
  return { status: res.status, headers: res.headers, body };
}

function init(body?: unknown, headers: Record<string, string> = {}): RequestInit {
  return body === undefined
    ? { headers }
    : {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json", ...headers },
      };
}

describe("one 402 for every way to pay", () => {
  it("offers x402 exact and x402-batch in PAYMENT-REQUIRED and the three MPP offers in WWW-Authenticate, at the catalog price; the body is the envelope and MPP's payment-required problem", async () => {
    for (const c of CALLS) {
      const res = await fetch(`${mesh.gatewayUrl}${c.path}`, init("body" in c ? c.body : undefined));
      const a = await answer(res, "body" in c ? "post" : "get", c.path);
      expect(a.status).toBe(402);
      const x402 = decodePaymentRequiredHeader(a.headers.get("payment-required") ?? "");
      expect(x402.accepts.map((o) => o.scheme)).toEqual(["exact", "batch-settlement", "x402-batch"]);
      const challenges = Challenge.fromResponseList(res);
      expect(
        challenges.map((ch) => [
          ch.method,
          ch.intent,
          ch.request.currency,
          ch.request.amount,
          ch.request.recipient,
        ]),
      ).toEqual([
        ["tempo", "charge", PATH_USD, String(priceAtomic(c.price)), PAY_TO],
        ["tempo", "charge", USDC_E, String(priceAtomic(c.price)), PAY_TO],
        ["tempo", "session", USDC_E, String(priceAtomic(c.price)), PAY_TO],
      ]);
      for (const ch of challenges) {
        expect(ch.request.methodDetails).toMatchObject({ chainId: tempo.chainId });
        // The id is an HMAC under the mesh's own secret (deploy/local keeps it in the state dir).
        const secretKey = readFileSync(join(mesh.stateDir, "mpp-secret-key"), "utf8").trim();
        expect(Challenge.verify(ch, { secretKey })).toBe(true);
        expect(Date.parse(ch.expires ?? "") - Date.now()).toBeGreaterThan(4 * 60_000);
      }
      expect(a.body).toMatchObject({
        data: null,
        error: { code: "payment_required" },
        type: "https://paymentauth.org/problems/payment-required",
        title: "Payment Required",
        status: 402,
      });
      expect(a.body.detail).toBe(a.body.error.message);
    }
  });
});

describe("MPP charge with the official mppx client", () => {
  for (const [symbol, currency, role] of [
    ["pathUSD", PATH_USD, "payer1"],
    ["USDC.e", USDC_E, "payer2"],
  ] as const) {
    it(`pays in ${symbol} for an endpoint of each price: 200, the data, a receipt, the recipient up by exactly the price`, async () => {
      const payer = mppChargePayer(devnet, role, currency);
      for (const c of CALLS) {
        const before = await balance(currency, PAY_TO);
        const res = await payer.fetch(`${mesh.gatewayUrl}${c.path}`, init("body" in c ? c.body : undefined));
        const a = await answer(res, "body" in c ? "post" : "get", c.path);
        expect(a.status, JSON.stringify(a.body)).toBe(200);
        c.check(a.body.data);
        expect(a.body.meta).toMatchObject({
          cost_usdc: c.price,
          payment_chain: CHAIN,
          payment_token: currency,
        });
        const receipt = Receipt.fromResponse(res);
        expect(receipt).toMatchObject({ method: "tempo", status: "success" });
        const mined = await getTransactionReceipt(chain(), { hash: receipt.reference as Hex });
        expect(mined.status).toBe("success");
        expect(await balance(currency, PAY_TO)).toBe(before + priceAtomic(c.price));
        // The transfer carries a memo bound to the challenge it paid.
        const [transfer] = parseEventLogs({
          abi: Abis.tip20,
          logs: mined.logs,
          eventName: "TransferWithMemo",
        });
        expect(transfer?.args).toMatchObject({ to: PAY_TO, amount: priceAtomic(c.price) });
      }
      expect(payer.sent).toHaveLength(CALLS.length);
      for (const sent of payer.sent)
        expect(Credential.deserialize(sent).payload).toMatchObject({ type: "transaction" });
    });
  }
});
