// The token endpoints: ERC-20 balances, allowances and transfers, ERC-721 holdings, ERC-1155
// balances and NFT metadata. One entry each; everything else about them is derived (endpoints.ts).
import { z } from "zod";
import { blockOrder, type Endpoint, LOG_ERRORS, logFilter, query, transfer } from "./endpoint-shape.ts";
import { address, addressOut, decimalAmount, quantity, queryInt, tokenId } from "./formats.ts";
import { CHAIN_NETWORKS } from "./networks.ts";

export const TOKEN_ENDPOINTS = {
  allowance: {
    id: "allowance",
    method: "GET",
    path: "/api/chain/allowance",
    price: "0.003",
    summary: "ERC-20 allowance",
    description: "Reads the ERC-20 `allowance(owner, spender)` and the token's `decimals()` in one eth_call.",
    networks: CHAIN_NETWORKS,
    params: { query: query({ contract: address, owner: address, spender: address }) },
    data: z.object({
      allowance: quantity.meta({ description: "Raw allowance, hex." }),
      contract: addressOut,
      decimals: z.number().int().nullable().meta({ description: "null when the token has no decimals()." }),
      owner: addressOut,
      spender: addressOut,
    }),
    upstream: "eth_call (Multicall3 aggregate3: allowance, decimals)",
    example: {
      query: {
        contract: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
        owner: "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045",
        spender: "0x000000000022D473030F116dDEE9F6B43aC78BA3",
      },
    },
    errors: ["execution_reverted"],
  },
  erc1155Balance: {
    id: "erc1155Balance",
    method: "GET",
    path: "/api/chain/erc1155-balance",
    price: "0.003",
    summary: "ERC-1155 balance",
    description: "Calls balanceOf(address, uint256) on an ERC-1155 contract.",
    networks: CHAIN_NETWORKS,
    params: { query: query({ address, contract: address, token_id: tokenId }) },
    data: z.object({
      account: addressOut,
      balance: decimalAmount,
      contract: addressOut,
      token_id: z.string(),
    }),
    upstream: "eth_call",
    example: {
      query: {
        address: "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045",
        contract: "0x76BE3b62873462d2142405439777e971754E8E77",
        token_id: "1",
      },
    },
    errors: ["execution_reverted"],
  },
  erc20Balance: {
    id: "erc20Balance",
    method: "GET",
    path: "/api/chain/erc20-balance",
    price: "0.003",
    summary: "ERC-20 balance",
    description: "Calls balanceOf(address), decimals() and symbol() in one Multicall3 eth_call.",
    networks: CHAIN_NETWORKS,
    params: { query: query({ address, contract: address }) },
    data: z.object({
      account: addressOut,
      balance: decimalAmount.meta({ description: "Raw units, decimal string." }),
      decimals: z.number().int().nullable(),
      symbol: z.string().nullable(),
      token: addressOut,
    }),
    upstream: "eth_call (Multicall3 aggregate3: balanceOf, decimals, symbol)",
    example: {
      query: {
        address: "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045",
        contract: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
      },
    },
    errors: ["execution_reverted"],
  },
  erc20Transfers: {
    id: "erc20Transfers",
    method: "GET",
    path: "/api/chain/erc20-transfers",
    price: "0.005",
    summary: "ERC-20 Transfer events",
    description:
      "eth_getLogs on Transfer(address,address,uint256), decoded. `address` matches the wallet as sender or recipient. ERC-721 transfers, which share the topic, are left out.",
    networks: CHAIN_NETWORKS,
    params: {
      query: query({
        contract: address.optional().meta({ description: "Narrows to one token contract." }),
        address: address.optional().meta({ description: "Narrows to a wallet as sender or recipient." }),
        ...logFilter,
      }).superRefine(blockOrder),
    },
    data: z.object({ count: z.number().int().min(0), transfers: z.array(transfer) }),
    upstream: "eth_getLogs (two filters in one batch when `address` is given)",
    example: { query: { contract: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", from_block: "latest" } },
    errors: LOG_ERRORS,
  },
  erc721Tokens: {
    id: "erc721Tokens",
    method: "GET",
    path: "/api/chain/erc721-tokens",
    price: "0.008",
    summary: "ERC-721 token ids held by an owner",
    description:
      "balanceOf(owner) and tokenOfOwnerByIndex(owner, i) for i < max in one Multicall3 eth_call. The contract must implement ERC721Enumerable.",
    networks: CHAIN_NETWORKS,
    params: {
      query: query({
        contract: address,
        address: address.meta({ description: "The wallet to enumerate." }),
        max: queryInt(1, 1000, 50),
      }),
    },
    data: z.object({
      contract: addressOut,
      owner: addressOut,
      count: z.number().int().min(0).meta({ description: "Number of ids in `tokens`." }),
      balance: decimalAmount.meta({
        description: "balanceOf(owner): more than `count` when `max` cut the list.",
      }),
      tokens: z.array(decimalAmount),
    }),
    upstream: "eth_call (Multicall3 aggregate3: balanceOf + up to `max` tokenOfOwnerByIndex)",
    example: {
      query: {
        contract: "0xBC4CA0EdA7647A8aB7C2061c2E118A18a936f13D",
        address: "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045",
        max: "10",
      },
    },
    errors: ["execution_reverted"],
  },
  nftMetadata: {
    id: "nftMetadata",
    method: "GET",
    path: "/api/chain/nft-metadata/{contract}/{token_id}",
    price: "0.005",
    summary: "NFT metadata URI and owner",
    description:
      "tokenURI (ERC-721) or uri (ERC-1155, `{id}` filled in), the ERC-721 owner and the standard, in one Multicall3 eth_call. Metadata stored on chain (a `data:application/json` URI) is decoded into `metadata`; off-chain metadata (https, ipfs) is not fetched: `token_uri` says where it is.",
    networks: CHAIN_NETWORKS,
    params: { path: z.strictObject({ contract: address, token_id: tokenId }), query: query({}) },
    data: z.object({
      contract: addressOut,
      token_id: z.string(),
      standard: z
        .enum(["ERC721", "ERC1155"])
        .nullable()
        .meta({ description: "From ERC-165; null when undeclared." }),
      token_uri: z
        .string()
        .meta({ description: "The metadata URI, as the standard defines it for this token." }),
      owner: addressOut.nullable().meta({ description: "ERC-721 ownerOf; null for ERC-1155." }),
      metadata: z
        .record(z.string(), z.unknown())
        .nullable()
        .meta({ description: "The JSON object of an on-chain data: URI; null for off-chain metadata." }),
    }),
    upstream: "eth_call (Multicall3 aggregate3: tokenURI, uri, ownerOf, supportsInterface ×2)",
    example: { path: { contract: "0xBC4CA0EdA7647A8aB7C2061c2E118A18a936f13D", token_id: "1" } },
    errors: ["execution_reverted"],
  },
} as const satisfies Record<string, Endpoint>;
