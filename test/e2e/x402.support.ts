// The helpers of the x402 exact suites through the gateway (x402.test.ts, x402-offers.test.ts): the
// mesh's devnet and settlement chain, a call paid with the official client, and what a settled or
// refused payment must look like. `settledHere` collects this file's settlements for the JetStream
// check in x402.test.ts.
import { type Endpoint, endpointById, priceAtomic } from "@tollgate/catalog";
import { readDevnetFile } from "@tollgate/devnet";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { decodePaymentResponseHeader, type PaymentRequired } from "@x402/fetch";
import type request from "supertest";
import { createPublicClient, erc20Abi, http, type PublicClient, parseEventLogs } from "viem";
import { expect } from "vitest";
import { get, mesh, post } from "../support/gateway.ts";
import { assertConforms } from "../support/openapi.ts";
import {
  type Address,
  settlementClient,
  settlementNetwork,
  usdcBalance,
  type X402Payer,
} from "../support/x402.ts";

export const devnet = readDevnetFile(mesh.devnetFile);
export const settlement = devnet.demo.settlement;
export const USDC = settlement.usdc.address;
export const PAY_TO = settlement.payTo;
export const NETWORK = settlementNetwork(devnet);
export const demo = devnet.demo.ethereum;
export const role = (r: string) => devnet.accounts.find((a) => a.role === r)?.address as Address;
export const thirdNetwork = Object.keys(devnet.chains).find(
  (n) => !["ethereum", "sepolia", "settlement"].includes(n),
);

export const chain: PublicClient = settlementClient(devnet);
export const ethereum = createPublicClient({
  transport: http(devnet.chains.ethereum?.rpcUrl, { retryCount: 0 }),
});
export const balance = (owner: Address) => usdcBalance(chain, devnet, owner);
export const atomic = (id: string) => priceAtomic(endpoint(id).price, settlement.usdc.decimals);

export function endpoint(id: string): Endpoint {
  const found = endpointById(id);
  if (!found) throw new Error(`no endpoint ${id}`);
  return found;
}

/** Every settlement outcome this file caused (settled, released), by gateway request id; checked against JetStream last. */
export const settledHere = new Map<string, string>();

interface Paid {
  status: number;
  headers: Headers;
  body: { data: Record<string, unknown> | null; error: { code: string; message: string } | null; meta: Meta };
}
interface Meta {
  endpoint: string;
  request_id: string;
  cost_usdc?: string;
  payment_chain?: string;
  payment_token?: string;
}

/** A call through the official paying fetch; the answer is checked against /openapi.json too. */
export async function payFor(payer: X402Payer, path: string, body?: unknown): Promise<Paid> {
  const res = await payer.fetch(`${mesh.gatewayUrl}${path}`, {
    method: body === undefined ? "GET" : "POST",
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const json = (await res.json()) as Paid["body"];
  const asSupertest = {
    status: res.status,
    headers: Object.fromEntries(res.headers),
    body: json,
  } as unknown as request.Response;
  await assertConforms(body === undefined ? "get" : "post", path, asSupertest);
  return { status: res.status, headers: res.headers, body: json };
}

/** Checks a paid 200: receipt header, meta, no quota headers, and the transfer on chain. */
export async function expectSettled(res: Paid, payer: X402Payer, id: string): Promise<string> {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const ep = endpoint(id);
  expect(res.body.error).toBeNull();
  expect(res.body.meta).toEqual({
    endpoint: ep.path,
    request_id: expect.any(String),
    cost_usdc: ep.price,
    payment_chain: NETWORK,
    payment_token: USDC,
  });
  expect([...res.headers.keys()].filter((h) => h.toLowerCase().startsWith("x-quota"))).toEqual([]);
  expect(res.headers.get("cache-control")).toBe("no-store");
  const receipt = decodePaymentResponseHeader(res.headers.get("payment-response") ?? "");
  expect(receipt).toMatchObject({ success: true, network: NETWORK, payer: payer.address });
  const tx = receipt.transaction as `0x${string}`;
  expect(tx).toMatch(/^0x[0-9a-f]{64}$/);

  // The transaction really is one transfer of exactly the price from the payer to payTo.
  const onChain = await chain.getTransactionReceipt({ hash: tx });
  expect(onChain.status).toBe("success");
  const transfers = parseEventLogs({ abi: erc20Abi, logs: onChain.logs, eventName: "Transfer" });
  expect(transfers.map((t) => [t.address.toLowerCase(), t.args.from, t.args.to, t.args.value])).toEqual([
    [USDC.toLowerCase(), payer.address, PAY_TO, atomic(id)],
  ]);
  settledHere.set(res.body.meta.request_id, tx);
  return tx;
}

/** What a client gets from the 402 challenge of `path`, signed by `payer` (after `tamper`). */
export async function signPayment(
  payer: X402Payer,
  path: string,
  body?: unknown,
  tamper?: (offer: PaymentRequired) => void,
): Promise<string> {
  const challenge = body === undefined ? await get(path) : await post(path, body);
  expect(challenge.status).toBe(402);
  const offer = payer.http.getPaymentRequiredResponse((name) => challenge.headers[name.toLowerCase()]);
  tamper?.(offer);
  const payload = await payer.http.createPaymentPayload(offer);
  const header = payer.http.encodePaymentSignatureHeader(payload)["PAYMENT-SIGNATURE"];
  if (!header) throw new Error("the client produced no PAYMENT-SIGNATURE");
  return header;
}

/** A refused payment: 402, payment_invalid, a reason matching `reason`, a fresh offer carrying it. */
export function expectRefused(res: request.Response, reason: RegExp): void {
  expect(res.status, JSON.stringify(res.body)).toBe(402);
  expect(res.body).toMatchObject({ data: null, error: { code: "payment_invalid" } });
  expect(res.body.error.message).toMatch(reason);
  expect(res.headers["cache-control"]).toBe("no-store");
  expect(res.headers["payment-response"]).toBeUndefined();
  const offer = decodePaymentRequiredHeader(res.headers["payment-required"] ?? "");
  expect(offer.x402Version).toBe(2);
  expect(offer.error).toBe(res.body.error.message);
}

/** The payer's and payTo's token balances. */
export async function balances(payer: Address): Promise<{ payer: bigint; payTo: bigint }> {
  const [p, t] = await Promise.all([balance(payer), balance(PAY_TO)]);
  return { payer: p, payTo: t };
}
