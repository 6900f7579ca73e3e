// x402-batch (the official batch-settlement scheme) through the whole shared mesh, paid with the
// unmodified official client (@x402/evm batch-settlement client through @x402/fetch) on the
// devnet's settlement chain, where our escrow and collector contracts stand in for the canonical
// deployment at the canonical addresses: one deposit, then calls paid by off-chain vouchers.
import { priceAtomic } from "@tollgate/catalog";
import { readDevnetFile } from "@tollgate/devnet";
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
} from "@x402/core/http";
import { signVoucher } from "@x402/evm/batch-settlement/client";
import { parseAbi } from "viem";
import { describe, expect, it } from "vitest";
import { get, mesh } from "../support/gateway.ts";
import { assertConforms } from "../support/openapi.ts";
import { type Address, settlementClient, settlementNetwork, usdcBalance } from "../support/x402.ts";
import { batchPayer, hundredCalls } from "../support/x402-batch.ts";

const devnet = readDevnetFile(mesh.devnetFile);
const chain = settlementClient(devnet);
const NETWORK = settlementNetwork(devnet);
const USDC = devnet.demo.settlement.usdc.address;
const PAY_TO = devnet.demo.settlement.payTo;
const ESCROW = devnet.chains.settlement?.contracts.batchSettlement as Address;
const MIN_DEPOSIT = 1_000_000n; // the default X402_BATCH_MIN_DEPOSIT: 1 USDC
const escrowAbi = parseAbi([
  "function channels(bytes32) view returns (uint128 balance, uint128 totalClaimed)",
]);

/** 100 calls at four prices (0.18 USDC in all). */
const CALLS = hundredCalls(devnet);

interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: checked against /openapi.json by assertConforms
  body: any;
}

async function paid(payer: ReturnType<typeof batchPayer>, path: string, body?: unknown): Promise<Answer> {
  const res = await payer.fetch(`${mesh.gatewayUrl}${path}`, {
    method: body === undefined ? "GET" : "POST",
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const json = await res.json();
  await assertConforms(body === undefined ? "get" : "post", path.split("?")[0] ?? path, {
    status: res.status,
    headers: Object.fromEntries(res.headers),
    body: json,
  } as never);
  return { status: res.status, headers: res.headers, body: json };
}

describe("x402-batch through the gateway, paid with the official batch-settlement client", () => {
  it("offers batch-settlement (and its spec name x402-batch) at every price with the same channel terms", async () => {
    const terms = new Set<string>();
    for (const path of [
      "/api/chain/block-number",
      "/api/chain/erc721-tokens?contract=0x0000000000000000000000000000000000000001&address=0x0000000000000000000000000000000000000002",
    ]) {
      const offer = decodePaymentRequiredHeader(String((await get(path)).headers["payment-required"]));
      const batch = offer.accepts.filter((a) => a.scheme === "batch-settlement" || a.scheme === "x402-batch");
      expect(batch.map((a) => a.scheme)).toEqual(["batch-settlement", "x402-batch"]);
      for (const a of batch) {
        expect(a).toMatchObject({ network: NETWORK, asset: USDC, payTo: PAY_TO });
        expect(a.extra).toMatchObject({ minDeposit: String(MIN_DEPOSIT), name: "USD Coin", version: "2" });
        const { receiverAuthorizer, withdrawDelay } = a.extra as {
          receiverAuthorizer: string;
          withdrawDelay: number;
        };
        terms.add(`${a.payTo}|${receiverAuthorizer}|${a.asset}|${withdrawDelay}`);
      }
    }
    expect(terms.size).toBe(1);
  });

  it("pays 100 calls at four prices over one channel: one deposit on chain, then vouchers only, every call served with its meta", async () => {
    const payer = batchPayer(devnet, "payer6");
    const before = await usdcBalance(chain, devnet, payer.address);
    const blockBefore = await chain.getBlockNumber();
    let expectedCharge = 0n;
    for (const c of CALLS) {
      const res = await paid(payer, c.path, c.body);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data).not.toBeNull();
      expect(res.body.meta).toMatchObject({
        cost_usdc: c.price,
        payment_chain: NETWORK,
        payment_token: USDC,
      });
      const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
      expect(receipt.success).toBe(true);
      // The receipt says what this call accrued, so the client keeps its cumulative in step.
      expect((receipt.extra as { chargedAmount?: string }).chargedAmount).toBe(String(priceAtomic(c.price)));
      expectedCharge += priceAtomic(c.price);
    }
    // One payment from the payer during the run: the deposit, exactly the announced minimum.
    expect(before - (await usdcBalance(chain, devnet, payer.address))).toBe(MIN_DEPOSIT);
    const first = decodePaymentSignatureHeader(payer.signatures[0] ?? "");
    const channelId = (first.payload as { voucher: { channelId: `0x${string}` } }).voucher.channelId;
    expect(
      await chain.readContract({
        address: ESCROW,
        abi: escrowAbi,
        functionName: "channels",
        args: [channelId],
      }),
    ).toEqual([MIN_DEPOSIT, 0n]);
    // Every later call paid with a voucher on the same channel, its cumulative rising by the price.
    const payloads = payer.signatures.map(
      (s) =>
        decodePaymentSignatureHeader(s).payload as {
          type: string;
          voucher: { channelId: string; maxClaimableAmount: string };
        },
    );
    expect(payloads.map((p) => p.type)).toEqual(["deposit", ...Array(CALLS.length - 1).fill("voucher")]);
    expect(new Set(payloads.map((p) => p.voucher.channelId))).toEqual(new Set([channelId]));
    expect(payloads.at(-1)?.voucher.maxClaimableAmount).toBe(String(expectedCharge));
    // Only the deposit's block touched the payer's channel: nothing from the payer since.
    const deposits = await chain.getLogs({
      address: USDC,
      event: parseAbi(["event Transfer(address indexed from, address indexed to, uint256 value)"])[0],
      args: { from: payer.address },
      // The head when the run began may hold an earlier suite's transfer from this payer.
      fromBlock: blockBefore + 1n,
    });
    expect(deposits).toHaveLength(1);
  });

  it("answers replays, a voucher below the charged amount, one above the deposit and a concurrent one as the scheme says, never serving one twice", async () => {
    const payer = batchPayer(devnet, "payer5");
    for (let i = 0; i < 2; i++) expect((await paid(payer, "/api/chain/block-number")).status).toBe(200);
    const last = decodePaymentSignatureHeader(payer.signatures.at(-1) ?? "");
    const channelId = (last.payload as { voucher: { channelId: `0x${string}` } }).voucher.channelId;
    const charged = BigInt(
      (last.payload as { voucher: { maxClaimableAmount: string } }).voucher.maxClaimableAmount,
    );
    const price = priceAtomic("0.001");
    /** A voucher for `cumulative` on the payer's channel, sent by hand (no client library retry). */
    const send = async (cumulative: bigint): Promise<Answer> => {
      const voucher = await signVoucher(payer.account, channelId, String(cumulative), NETWORK);
      const header = Buffer.from(
        JSON.stringify({ ...last, payload: { ...(last.payload as object), voucher } }),
      ).toString("base64");
      const res = await fetch(`${mesh.gatewayUrl}/api/chain/block-number`, {
        headers: { "PAYMENT-SIGNATURE": header },
      });
      return { status: res.status, headers: res.headers, body: await res.json() };
    };

    // The last voucher again: already charged.
    const replay = await fetch(`${mesh.gatewayUrl}/api/chain/block-number`, {
      headers: { "PAYMENT-SIGNATURE": payer.signatures.at(-1) ?? "" },
    });
    expect(replay.status).toBe(402);
    expect(replay.headers.get("payment-response")).toBeNull();

    // Below what is charged: the corrective 402 carries the channel's state to resynchronise.
    const below = await send(charged - price);
    expect(below.status).toBe(402);
    expect(below.body.error.message).toMatch(/cumulative_amount_mismatch/);
    const corrective = decodePaymentRequiredHeader(below.headers.get("payment-required") ?? "");
    const state = corrective.accepts.find((a) => a.scheme === "batch-settlement")?.extra.channelState as {
      chargedCumulativeAmount: string;
    };
    expect(state.chargedCumulativeAmount).toBe(String(charged));

    // Above the deposit: refused, nothing served.
    const above = await send(MIN_DEPOSIT + 1n);
    expect(above.status).toBe(402);
    expect(above.body.error.message).toMatch(/exceed|mismatch/);

    // Two requests on the channel at once: one is served, the other refused; never both.
    const pair = await Promise.all([send(charged + price), send(charged + price)]);
    expect(pair.map((r) => r.status).sort()).toEqual([200, 402]);
    for (const r of [replay, below, above, ...pair]) expect(r.status).toBeLessThan(500);

    // The channel charged exactly the three served calls.
    const next = await send(charged + 2n * price);
    expect(next.status, JSON.stringify(next.body)).toBe(200);

    // A client that lost its local state (a restarted agent) resynchronises through the corrective
    // 402 and goes on paying on the same channel: no second deposit, one price per call.
    const balance = await usdcBalance(chain, devnet, payer.address);
    const restarted = batchPayer(devnet, "payer5");
    const again = await paid(restarted, "/api/chain/block-number");
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const resumed = decodePaymentSignatureHeader(restarted.signatures.at(-1) ?? "").payload as {
      voucher: { channelId: string; maxClaimableAmount: string };
    };
    expect(resumed.voucher).toMatchObject({ channelId, maxClaimableAmount: String(charged + 3n * price) });
    expect(await usdcBalance(chain, devnet, payer.address)).toBe(balance);
  });
});
