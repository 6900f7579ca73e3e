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
import { getBlockNumber, getTransactionReceipt } from "viem/actions";
import { Abis } from "viem/tempo";
import { describe, expect, it } from "vitest";
import { mesh, metricSum } from "../support/gateway.ts";
import {
  mppChargePayer,
  mppSessionPayer,
  tempoChain,
  tempoClient,
  tip20Balance,
  transactionsFrom,
} from "../support/mppx.ts";
import { assertConforms } from "../support/openapi.ts";
import { settlementClient, usdcBalance, x402Payer } from "../support/x402.ts";

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

describe("MPP charge with the official mppx client — payment-verifier reaches anvil's Tempo mode through the devnet's JSON-RPC shim (a stand-in)", () => {
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

describe("MPP charge: replays, refusals with their reason, concurrency — through the devnet's JSON-RPC shim (a stand-in)", () => {
  const path = "/api/chain/chain-id";
  const price = priceAtomic("0.001");
  const send = async (url: string, authorization: string, body?: unknown) =>
    answer(
      await fetch(`${mesh.gatewayUrl}${url}`, init(body, { authorization })),
      body === undefined ? "get" : "post",
      url,
    );

  it("answers a malformed or foreign credential with a 402 saying what is wrong, never a 5xx, charging nothing", async () => {
    const before = await balance(USDC_E, PAY_TO);
    const garbage = await send(path, "Payment not-base64url-json");
    expect(garbage.status).toBe(402);
    expect(garbage.body.error.message).toMatch(/^Authorization: Payment is not an MPP credential/);
    expect(garbage.body.type).toBe("https://paymentauth.org/problems/verification-failed");
    // A well-formed credential of a method this API does not offer.
    const offer = Challenge.fromResponseList(await fetch(`${mesh.gatewayUrl}${path}`))[0];
    const stripe = Credential.serialize(
      Credential.from({
        challenge: { ...(offer as Challenge.Challenge), method: "stripe" },
        payload: { token: "tok" },
      }),
    );
    const foreign = await send(path, stripe);
    expect(foreign.status).toBe(402);
    expect(foreign.body.error.message).toMatch(/scheme not offered here; offered: mpp-charge, mpp-session/);
    expect(foreign.headers.get("www-authenticate")).toContain('intent="session"');
    expect(await balance(USDC_E, PAY_TO)).toBe(before);
  });

  it("takes a hash credential (the client broadcast the transfer itself) once", async () => {
    const payer = mppChargePayer(devnet, "payer3", USDC_E, "push");
    const before = await balance(USDC_E, PAY_TO);
    const res = await payer.fetch(`${mesh.gatewayUrl}${path}`);
    const a = await answer(res, "get", path);
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    expect(a.body.meta).toMatchObject({ cost_usdc: "0.001", payment_token: USDC_E });
    expect(Credential.deserialize(payer.sent[0] ?? "").payload).toMatchObject({ type: "hash" });
    expect(Receipt.fromResponse(res).reference).toBe(
      (Credential.deserialize(payer.sent[0] ?? "").payload as { hash: string }).hash,
    );
    expect(await balance(USDC_E, PAY_TO)).toBe(before + price);
  });

  for (const mode of ["pull", "push"] as const) {
    it(`a replayed ${mode === "pull" ? "transaction" : "hash"} credential moves no money and serves nothing`, async () => {
      const payer = mppChargePayer(devnet, "payer3", PATH_USD, mode);
      expect((await payer.fetch(`${mesh.gatewayUrl}${path}`)).status).toBe(200);
      const used = payer.sent.at(-1) ?? "";
      const before = await balance(PATH_USD, PAY_TO);
      const replays = await Promise.all([send(path, used), send(path, used), send(path, used)]);
      for (const replay of replays) {
        expect(replay.status).toBe(402);
        expect(replay.body.data).toBeNull();
        expect(replay.body.error.message).toMatch(/already (been )?used/);
        expect(replay.headers.get("payment-receipt")).toBeNull();
        expect(replay.body.type).toBe("https://paymentauth.org/problems/verification-failed");
      }
      expect(await balance(PATH_USD, PAY_TO)).toBe(before);
    });
  }

  it("refuses a credential for a cheaper endpoint, another recipient, an expired challenge or another currency, saying which", async () => {
    const payer = mppChargePayer(devnet, "payer4", USDC_E);
    const cheap = await fetch(`${mesh.gatewayUrl}${path}`);
    const credential = await payer.client.createCredential(cheap);
    const before = await balance(USDC_E, PAY_TO);

    // Issued for chain-id (0.001), presented at call (0.005).
    const dear = await send("/api/chain/call", credential, {
      to: demo.reverter.address,
      data: toFunctionSelector("ok()"),
    });
    expect(dear.status).toBe(402);
    expect(dear.body.error.message).toMatch(
      /pays 1000 atomic units of USDC\.e, but \/api\/chain\/call costs 5000/,
    );
    expect(dear.body.type).toBe("https://paymentauth.org/problems/invalid-challenge");

    // The same credential with its challenge changed, re-signed with the mesh's own secret so only
    // the named field is wrong: the reason names it before anything touches the chain.
    const secretKey = readFileSync(join(mesh.stateDir, "mpp-secret-key"), "utf8").trim();
    const parsed = Credential.deserialize(credential);
    const { id: _id, ...issued } = parsed.challenge;
    const altered = (request: Record<string, unknown>, expires = issued.expires) =>
      Credential.serialize({
        ...parsed,
        challenge: Challenge.from({
          ...issued,
          request: { ...issued.request, ...request },
          ...(expires ? { expires } : {}),
          secretKey,
        }),
      });
    const other = await send(path, altered({ recipient: A }));
    expect(other.body.error.message).toContain(`this API's recipient is ${PAY_TO}`);
    const expired = await send(path, altered({}, new Date(Date.now() - 1_000).toISOString()));
    expect(expired.body.error.message).toMatch(/challenge expired at/);
    expect(expired.body.type).toBe("https://paymentauth.org/problems/payment-expired");
    const currency = await send(path, altered({ currency: demo.erc20.address }));
    expect(currency.body.error.message).toMatch(/pays in token .* this API takes pathUSD .* or USDC\.e/);
    // A challenge this mesh did not issue (another secret) is refused as such.
    const forged = Credential.serialize({
      ...parsed,
      challenge: Challenge.from({ ...issued, secretKey: `${secretKey}-not-ours` }),
    });
    expect((await send(path, forged)).body.error.message).toMatch(/not issued by this server/);
    for (const r of [other, expired, currency]) expect(r.status).toBe(402);

    // None of that moved money; the credential still pays for its own endpoint.
    expect(await balance(USDC_E, PAY_TO)).toBe(before);
    const own = await send(path, credential);
    expect(own.status).toBe(200);
    expect(await balance(USDC_E, PAY_TO)).toBe(before + price);
  });

  it("refuses a payer without funds with a 402 saying so (mppx alone answers 500), moving nothing — the shim runs the Tempo call batch anvil's eth_call skips", async () => {
    const broke = mppChargePayer(devnet, "spare1", USDC_E);
    expect(await balance(USDC_E, broke.account.address)).toBe(0n);
    const before = await balance(USDC_E, PAY_TO);
    const a = await answer(await broke.fetch(`${mesh.gatewayUrl}${path}`), "get", path);
    expect(a.status).toBe(402);
    expect(a.body.error.message).toMatch(/fails on the Tempo chain.*holds the token/);
    expect(await balance(USDC_E, PAY_TO)).toBe(before);
  });

  it("settles 50 concurrent charges from eight payers once each", async () => {
    const payers = Array.from({ length: 8 }, (_, i) => mppChargePayer(devnet, `payer${i + 1}`, USDC_E));
    const before = await balance(USDC_E, PAY_TO);
    const results = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const res = await (payers[i % payers.length]?.fetch ?? fetch)(`${mesh.gatewayUrl}${path}`);
        return { status: res.status, receipt: res.headers.get("payment-receipt"), body: await res.json() };
      }),
    );
    for (const r of results) expect(r.status, JSON.stringify(r.body)).toBe(200);
    const references = results.map((r) => Receipt.deserialize(r.receipt ?? "").reference);
    expect(new Set(references).size).toBe(50);
    expect(await balance(USDC_E, PAY_TO)).toBe(before + 50n * price);
  });
});

describe("MPP session with the official session manager — channel reserve: a contract of ours standing in for the TIP-1034 precompile; payment-verifier's RPC through the devnet's shim", () => {
  it("100 calls at four prices: on chain from the payer only the open and one top-up; close settles exactly the sum of the prices", async () => {
    // The offer suggests a 1 USDC.e deposit; the client may commit up to 1.2 (open + top-up).
    const { account, manager, sent } = mppSessionPayer(devnet, "payer6", "1.2");
    const payerBefore = await balance(USDC_E, account.address);
    const payToBefore = await balance(USDC_E, PAY_TO);
    const firstBlock = await getBlockNumber(chain());
    const mix = [CALLS[0], CALLS[1], CALLS[3], CALLS[4]];
    let spent = 0n;
    let channelId: Hex | undefined;
    for (let i = 0; i < 100; i++) {
      const c = mix[i % mix.length] ?? CALLS[0];
      if (i === 50) {
        const topUp = await manager.topUp("0.2");
        expect(topUp?.txHash).toMatch(/^0x[0-9a-f]{64}$/);
      }
      const res = await manager.fetch(`${mesh.gatewayUrl}${c.path}`, init("body" in c ? c.body : undefined));
      const a = await answer(res, "body" in c ? "post" : "get", c.path);
      expect(a.status, JSON.stringify(a.body)).toBe(200);
      c.check(a.body.data);
      expect(a.body.meta).toMatchObject({ cost_usdc: c.price, payment_chain: CHAIN, payment_token: USDC_E });
      spent += priceAtomic(c.price);
      expect(res.receipt).toMatchObject({ intent: "session", spent: String(spent), units: i + 1 });
      channelId ??= res.receipt?.channelId as Hex;
      expect(res.receipt?.channelId).toBe(channelId);
    }
    const lastBlock = await getBlockNumber(chain());
    // Off chain: every call after the open paid with a voucher; the payer sent two transactions.
    const actions = sent.map((s) => (Credential.deserialize(s).payload as { action: string }).action);
    expect(actions.filter((x) => x === "open")).toHaveLength(1);
    expect(actions.filter((x) => x === "voucher")).toHaveLength(99);
    expect(await transactionsFrom(tempo.anvilRpcUrl, account.address, firstBlock, lastBlock)).toHaveLength(2);
    expect(await balance(USDC_E, PAY_TO)).toBe(payToBefore); // nothing settled yet

    const closed = await manager.close();
    const { logs } = await getTransactionReceipt(chain(), { hash: closed?.txHash as Hex });
    const [event] = parseEventLogs({ abi: Abis.tip20ChannelReserve, logs, eventName: "ChannelClosed" });
    expect(event?.args).toMatchObject({
      channelId,
      settledToPayee: spent,
      refundedToPayer: priceAtomic("1.2") - spent,
    });
    expect(await balance(USDC_E, PAY_TO)).toBe(payToBefore + spent);
    expect(await balance(USDC_E, account.address)).toBe(payerBefore - spent);
  });

  it("answers the close the client posts to a GET route with 204 and the receipt, calling no node", async () => {
    const { manager } = mppSessionPayer(devnet, "payer7", "0.05");
    expect((await manager.fetch(`${mesh.gatewayUrl}/api/chain/chain-id`)).status).toBe(200);
    const executes = () =>
      metricSum("rpc-proxy", "grpc_server_handling_seconds_count", { grpc_method: "Execute" });
    const served = await executes();
    const closed = await manager.close();
    expect(closed).toMatchObject({ intent: "session", spent: String(priceAtomic("0.001")) });
    expect(await executes()).toBe(served);
    // A bodiless POST with no payment on that route is still the 405 it always was.
    const plain = await fetch(`${mesh.gatewayUrl}/api/chain/chain-id`, { method: "POST" });
    expect(plain.status).toBe(405);
  });
});

describe("each official client picks its own offer from one 402", () => {
  it("the x402 client pays x402 exact and the mppx client pays MPP charge for the same endpoint", async () => {
    const path = "/api/chain/chain-id";
    const x402 = x402Payer(devnet, "payer8");
    const settlement = settlementClient(devnet);
    const usdcBefore = await usdcBalance(settlement, devnet, devnet.demo.settlement.payTo);
    const viaX402 = await x402.fetch(`${mesh.gatewayUrl}${path}`);
    expect(viaX402.status).toBe(200);
    expect(((await viaX402.json()) as { meta: { payment_chain: string } }).meta.payment_chain).toBe(
      devnet.demo.settlement.network,
    );
    expect(viaX402.headers.get("payment-response")).not.toBeNull();
    expect(await usdcBalance(settlement, devnet, devnet.demo.settlement.payTo)).toBe(
      usdcBefore + priceAtomic("0.001"),
    );

    const mpp = mppChargePayer(devnet, "payer8", PATH_USD);
    const tempoBefore = await balance(PATH_USD, PAY_TO);
    const viaMpp = await mpp.fetch(`${mesh.gatewayUrl}${path}`);
    expect(viaMpp.status).toBe(200);
    expect(((await viaMpp.json()) as { meta: { payment_chain: string } }).meta.payment_chain).toBe(CHAIN);
    expect(viaMpp.headers.get("payment-receipt")).not.toBeNull();
    expect(await balance(PATH_USD, PAY_TO)).toBe(tempoBefore + priceAtomic("0.001"));
  });
});
