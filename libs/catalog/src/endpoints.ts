// The endpoint catalog: every endpoint once, in catalog order, and the lookups derived from it.
import { TOP_UP_PRODUCTS } from "./credits.ts";
import type { Endpoint } from "./endpoint-shape.ts";
import { ACCOUNT_ENDPOINTS } from "./endpoints-accounts.ts";
import { CHAIN_ENDPOINTS } from "./endpoints-chain.ts";
import { TOKEN_ENDPOINTS } from "./endpoints-tokens.ts";
import { pricedRpcEndpoint, RPC_ENDPOINT, rpcMethodsOf } from "./json-rpc.ts";

export type { Endpoint } from "./endpoint-shape.ts";

/**
 * One description per endpoint. Routing, validation, 402 prices, /api/pricing,
 * /api/networks, /openapi.json, /llms.txt and the rpc-proxy's operation table are
 * all derived from this list; nothing about an endpoint is written anywhere else.
 * Catalog order (by path) is the order every listing shows.
 */
export const ENDPOINTS = [
  TOKEN_ENDPOINTS.allowance,
  ACCOUNT_ENDPOINTS.balance,
  CHAIN_ENDPOINTS.blockNumber,
  CHAIN_ENDPOINTS.block,
  ACCOUNT_ENDPOINTS.call,
  CHAIN_ENDPOINTS.chainId,
  ACCOUNT_ENDPOINTS.code,
  ACCOUNT_ENDPOINTS.contract,
  ACCOUNT_ENDPOINTS.ens,
  TOKEN_ENDPOINTS.erc1155Balance,
  TOKEN_ENDPOINTS.erc20Balance,
  TOKEN_ENDPOINTS.erc20Transfers,
  TOKEN_ENDPOINTS.erc721Tokens,
  ACCOUNT_ENDPOINTS.estimateGas,
  ACCOUNT_ENDPOINTS.events,
  CHAIN_ENDPOINTS.networkInfo,
  TOKEN_ENDPOINTS.nftMetadata,
  CHAIN_ENDPOINTS.receipt,
  CHAIN_ENDPOINTS.transaction,
] as const satisfies readonly Endpoint[];

export type EndpointId = (typeof ENDPOINTS)[number]["id"];

// rpc-proxy runs the JSON-RPC relay as one more operation.
const byId = new Map<string, Endpoint>([...ENDPOINTS, RPC_ENDPOINT].map((e) => [e.id, e]));

export function endpointById(id: string): Endpoint | undefined {
  return byId.get(id);
}

/**
 * Everything payment-verifier charges for, in listing order: each chain endpoint, named by its path
 * template, the JSON-RPC endpoint (at its cheapest call; a body is named with its methods, below),
 * then each top-up, named by topUpResource(amount) (Resource.endpoint). The 402's prices
 * and the discovery list (GET /.well-known/x402) read this one list.
 */
export const PAID_RESOURCES: readonly Endpoint[] = [...ENDPOINTS, RPC_ENDPOINT, ...TOP_UP_PRODUCTS];

const paid = new Map<string, Endpoint>(PAID_RESOURCES.map((e) => [e.path, e]));

export function paidResource(name: string): Endpoint | undefined {
  const known = paid.get(name);
  if (known) return known;
  const methods = rpcMethodsOf(name);
  return methods ? pricedRpcEndpoint(methods) : undefined;
}

/** Price in the settlement token's atomic units (USDC: 6 decimals). */
export function priceAtomic(price: string, decimals = 6): bigint {
  const [whole = "0", frac = ""] = price.split(".");
  return BigInt(whole + frac.padEnd(decimals, "0").slice(0, decimals));
}
