import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { EndpointId } from "@tollgate/catalog";
import type { Address, ChainDemo, DevnetFile } from "@tollgate/devnet";
import { encodeFunctionData, type Hex, numberToHex, parseAbi, toFunctionSelector } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { inject } from "vitest";

/** The shared mesh's devnet.json: the known, seeded state every read is checked against. */
export const devnet = JSON.parse(readFileSync(inject("mesh").devnetFile, "utf8")) as DevnetFile;

/** The two networks every chain endpoint serves, seeded identically. */
export const CHAIN_NETWORKS = ["ethereum", "sepolia"] as const;
export type ChainNetwork = (typeof CHAIN_NETWORKS)[number];

function role(name: string): Address {
  const account = devnet.accounts.find((a) => a.role === name);
  if (!account) throw new Error(`no devnet account with role ${name}`);
  return account.address;
}

export const A = role("A");
export const B = role("B");
export const C = role("C");
export const D = role("D");

/**
 * payment-verifier's x402 (and MPP) settings for a suite's own mesh that settles on the shared devnet's chain
 * (startMesh configures x402 only for a devnet it starts itself), with a facilitator account of its
 * own (`facilitatorRole`) so it never races the shared mesh for a nonce.
 */
export function sharedSettlementEnv(facilitatorRole: string): Record<string, string> {
  const { settlement } = devnet.demo;
  const facilitator = devnet.accounts.find((a) => a.role === facilitatorRole);
  const rpcUrl = devnet.chains.settlement?.rpcUrl;
  if (!facilitator || !rpcUrl)
    throw new Error(`the devnet has no settlement chain or account ${facilitatorRole}`);
  return {
    X402_NETWORK: settlement.network,
    X402_ASSET: settlement.usdc.address,
    X402_ASSET_NAME: settlement.usdc.domain.name,
    X402_ASSET_VERSION: settlement.usdc.domain.version,
    X402_PAY_TO: settlement.payTo,
    X402_SETTLEMENT_RPC_URL: rpcUrl,
    X402_FACILITATOR_PRIVATE_KEY: facilitator.privateKey,
    X402_BATCH_AUTHORIZER_PRIVATE_KEY: generatePrivateKey(),
    ...sharedMppEnv(facilitatorRole),
  };
}

/** payment-verifier's MPP settings for a suite's own mesh on the shared devnet's Tempo chain. */
function sharedMppEnv(serverRole: string): Record<string, string> {
  const tempo = devnet.chains.tempo;
  const server = devnet.accounts.find((a) => a.role === serverRole);
  if (!tempo || !server) throw new Error(`the devnet has no tempo chain or account ${serverRole}`);
  return {
    MPP_SECRET_KEY: randomBytes(32).toString("base64"),
    MPP_TEMPO_RPC_URL: tempo.rpcUrl,
    MPP_CHAIN_ID: String(tempo.chainId),
    MPP_PAY_TO: devnet.demo.tempo.payTo,
    MPP_SERVER_PRIVATE_KEY: server.privateKey,
    MPP_FEE_TOKEN: devnet.demo.tempo.pathUsd.address,
    MPP_CHANNEL_RESERVE: devnet.demo.tempo.channelReserve.address,
  };
}

export const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

const erc20Abi = parseAbi(["function balanceOf(address owner) view returns (uint256)"]);

/** Calldata of the demo contracts' functions. */
export const calldata = {
  balanceOf: (owner: Address): Hex =>
    encodeFunctionData({ abi: erc20Abi, functionName: "balanceOf", args: [owner] }),
  ok: toFunctionSelector("ok()"),
  alwaysReverts: toFunctionSelector("alwaysReverts()"),
  customError: toFunctionSelector("revertsWithCustomError()"),
  panics: toFunctionSelector("panics()"),
};

/** One gateway request: path values, query string and (POST) JSON body. */
export interface ChainRequest {
  path?: Record<string, string>;
  query?: Record<string, string | string[]>;
  body?: unknown;
}

/** The concrete URL path of a request to a catalog path template. */
export function urlOf(template: string, req: ChainRequest): string {
  const path = template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const value = req.path?.[name];
    if (value === undefined) throw new Error(`no value for {${name}} in ${template}`);
    return encodeURIComponent(value);
  });
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(req.query ?? {})) {
    for (const one of Array.isArray(v) ? v : [v]) search.append(k, one);
  }
  const qs = search.toString();
  return qs ? `${path}?${qs}` : path;
}

/**
 * A request per endpoint that succeeds against the devnet's seeded state on `network`;
 * the compiler checks every catalog endpoint has one.
 */
export function validRequests(network: ChainNetwork | string = "ethereum"): Record<EndpointId, ChainRequest> {
  const demo: ChainDemo = devnet.demo[network === "sepolia" ? "sepolia" : "ethereum"];
  const q = (query: Record<string, string> = {}) => ({ ...query, network });
  return {
    allowance: { query: q({ contract: demo.erc20.address, owner: A, spender: B }) },
    blockNumber: { query: q() },
    block: { path: { number: "3" }, query: q() },
    call: { query: q(), body: { to: demo.reverter.address, data: calldata.ok } },
    chainId: { query: q() },
    code: { path: { address: demo.erc20.address }, query: q() },
    contract: { path: { address: demo.erc20.address }, query: q() },
    ens: { path: { input: "demo.eth" }, query: q() },
    erc1155Balance: { query: q({ address: A, contract: demo.erc1155.address, token_id: "1" }) },
    erc20Balance: { query: q({ address: A, contract: demo.erc20.address }) },
    erc20Transfers: {
      query: q({ contract: demo.erc20.address, address: B, from_block: "0", to_block: "latest" }),
    },
    erc721Tokens: { query: q({ contract: demo.erc721.address, address: A, max: "10" }) },
    estimateGas: {
      query: q(),
      body: {
        from: demo.estimateGas.from,
        to: demo.estimateGas.to,
        value: numberToHex(BigInt(demo.estimateGas.value)),
      },
    },
    events: {
      query: q({ contract: demo.erc20.address, topic: TRANSFER_TOPIC, from_block: "0", to_block: "latest" }),
    },
    networkInfo: { query: q() },
    balance: { path: { address: A }, query: q() },
    nftMetadata: { path: { contract: demo.erc721.address, token_id: firstToken(demo) }, query: q() },
    receipt: { path: { hash: demo.erc20.transfers[1]!.txHash }, query: q() },
    transaction: { path: { hash: demo.erc20.transfers[1]!.txHash }, query: q() },
  };
}

/** A token id of the demo ERC-721 collection that exists (held by A). */
export function firstToken(demo: ChainDemo): string {
  const id = demo.erc721.owners[A]?.[0];
  if (!id) throw new Error("the devnet's ERC-721 demo has no token for A");
  return id;
}
