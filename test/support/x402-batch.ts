// The official x402 `batch-settlement` pieces (@x402/evm 2.27.0) wired to a devnet, for tests: a
// payer using the official client scheme through @x402/fetch, and the official facilitator running
// in-process with a devnet account. Must not depend on vitest (benchmarks may reuse it).

import { x402Facilitator } from "@x402/core/facilitator";
import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements, SupportedResponse } from "@x402/core/types";
import { toClientEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme as BatchClientScheme } from "@x402/evm/batch-settlement/client";
import { BatchSettlementEvmScheme as BatchFacilitatorScheme } from "@x402/evm/batch-settlement/facilitator";
import { type Network, wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";
import { createPublicClient, http } from "viem";
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { type DevnetInfo, facilitatorSigner, settlementNetwork } from "./x402.ts";

export interface BatchPayer {
  address: `0x${string}`;
  account: PrivateKeyAccount;
  /** The official client scheme (its own in-memory channel storage). */
  scheme: BatchClientScheme;
  client: x402Client;
  http: x402HTTPClient;
  /** fetch that answers 402s by paying (official @x402/fetch wrapper). */
  fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** Every PAYMENT-SIGNATURE header `fetch` sent, in order. */
  signatures: string[];
  /** How long each request carrying a payment took (ms), in order. */
  paidMs: number[];
}

function privateKeyOf(devnet: DevnetInfo, role: string): `0x${string}` {
  const found = devnet.accounts.find((a) => a.role === role);
  if (!found) throw new Error(`the devnet has no account "${role}"`);
  return found.privateKey;
}

function rpcUrlOf(devnet: DevnetInfo): string {
  const rpcUrl = devnet.chains.settlement?.rpcUrl;
  if (!rpcUrl) throw new Error("the devnet has no settlement chain");
  return rpcUrl;
}

/**
 * A devnet payer paying with the official batch-settlement client. The signer can read the chain,
 * so a client without local state recovers its channel from `channels(channelId)`.
 */
export function batchPayer(devnet: DevnetInfo, role: string): BatchPayer {
  return batchPayerOfKey(devnet, privateKeyOf(devnet, role));
}

/** A payer of its own key; `salt`: another channel of the same payer (the SDK's default salt otherwise). */
export function batchPayerOfKey(devnet: DevnetInfo, key: `0x${string}`, salt?: `0x${string}`): BatchPayer {
  const account = privateKeyToAccount(key);
  const reader = createPublicClient({ transport: http(rpcUrlOf(devnet), { retryCount: 0 }) });
  const signer = toClientEvmSigner(account, reader);
  const scheme = salt ? new BatchClientScheme(signer, { salt }) : new BatchClientScheme(signer);
  const network = settlementNetwork(devnet);
  const client = new x402Client()
    // The devnet token is not one of the SDK's default assets: a client opts in to it. With no
    // per-asset maxAmountPerPayment there is no cap on the deposit the server announces.
    .setSpendControls({ allowedAssets: [{ network, asset: devnet.demo.settlement.usdc.address }] })
    .register(network, scheme);
  const signatures: string[] = [];
  const paidMs: number[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const signature = request.headers.get("payment-signature");
    if (!signature) return fetch(request);
    signatures.push(signature);
    const started = performance.now();
    const response = await fetch(request);
    paidMs.push(performance.now() - started);
    return response;
  };
  return {
    address: account.address,
    account,
    scheme,
    client,
    http: new x402HTTPClient(client),
    fetch: wrapFetchWithPayment(recording, client),
    signatures,
    paidMs,
  };
}

export interface InProcessFacilitator extends FacilitatorClient {
  /** "verify deposit", "settle claim", ...: every call, in order. */
  calls: string[];
  address: `0x${string}`;
}

/**
 * The official x402Facilitator with the batch-settlement facilitator scheme, submitting from the
 * devnet account `role`. No authorizer signer: the resource server signs claims and refunds with
 * its own receiverAuthorizer key.
 */
export function batchFacilitator(devnet: DevnetInfo, role = "facilitator"): InProcessFacilitator {
  const signer = facilitatorSigner(devnet, role);
  const facilitator = new x402Facilitator().register(
    settlementNetwork(devnet) as Network,
    new BatchFacilitatorScheme(signer),
  );
  const calls: string[] = [];
  const kind = (p: PaymentPayload) => String((p.payload as { type?: unknown }).type);
  return {
    calls,
    address: signer.getAddresses()[0] as `0x${string}`,
    verify: (p: PaymentPayload, r: PaymentRequirements) => {
      calls.push(`verify ${kind(p)}`);
      return facilitator.verify(p, r);
    },
    settle: (p: PaymentPayload, r: PaymentRequirements) => {
      calls.push(`settle ${kind(p)}`);
      return facilitator.settle(p, r);
    },
    getSupported: async () => facilitator.getSupported() as SupportedResponse,
  };
}

/** One paid call of a run: its path, catalog price and JSON body (POST) if any. */
export interface BatchCall {
  path: string;
  price: string;
  body?: unknown;
}

/** 100 calls at four prices (0.18 USDC in all) on the devnet's demo contracts. */
export function hundredCalls(devnet: DevnetInfo): BatchCall[] {
  const demo = devnet.demo.ethereum;
  const holder = devnet.accounts.find((a) => a.role === "A")?.address;
  return [
    ...Array.from({ length: 40 }, () => ({ path: "/api/chain/block-number", price: "0.001" })),
    ...Array.from({ length: 30 }, () => ({ path: "/api/chain/chain-id?network=sepolia", price: "0.001" })),
    ...Array.from({ length: 20 }, () => ({
      path: `/api/chain/erc20-balance?address=${holder}&contract=${demo.erc20.address}`,
      price: "0.003",
    })),
    ...Array.from({ length: 10 }, () => ({
      path: "/api/chain/call",
      price: "0.005",
      body: { to: demo.erc20.address, data: "0x18160ddd" },
    })),
  ];
}
