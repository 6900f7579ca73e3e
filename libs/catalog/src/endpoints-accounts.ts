// The endpoints on an address or contract: balance, code, contract facts, ENS, calls and gas
// estimates against it, and its events. One entry each; everything else about them is derived
// (endpoints.ts).
import { z } from "zod";
import { blockOrder, callBody, type Endpoint, LOG_ERRORS, log, logFilter, query } from "./endpoint-shape.ts";
import {
  address,
  addressOut,
  blockSelector,
  decimalAmount,
  ensInput,
  hash32,
  hexData,
  quantity,
} from "./formats.ts";
import { CHAIN_NETWORKS } from "./networks.ts";

export const ACCOUNT_ENDPOINTS = {
  balance: {
    id: "balance",
    method: "GET",
    path: "/api/chain/balance/{address}",
    price: "0.002",
    summary: "Native-coin balance",
    description:
      "The account's ETH balance in wei via eth_getBalance, at the latest block or the one `block` names.",
    networks: CHAIN_NETWORKS,
    params: {
      path: z.strictObject({ address }),
      query: query({
        block: blockSelector
          .optional()
          .meta({ description: "Block to read the balance at. Default latest." }),
      }),
    },
    data: z.object({
      account: addressOut,
      balance: decimalAmount.meta({ description: "Wei, decimal string." }),
      decimals: z.literal(18),
      symbol: z.literal("ETH"),
      block: z
        .string()
        .meta({ description: "The block read: a tag or a hex block number, as sent to the node." }),
    }),
    upstream: "eth_getBalance",
    example: { path: { address: "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045" } },
    errors: ["block_not_found"],
  },
  code: {
    id: "code",
    method: "GET",
    path: "/api/chain/code/{address}",
    price: "0.003",
    summary: "Deployed bytecode",
    description: "Deployed bytecode via eth_getCode. Empty bytecode means a plain wallet account.",
    networks: CHAIN_NETWORKS,
    params: { path: z.strictObject({ address }), query: query({}) },
    data: z.object({
      address: addressOut,
      code: hexData,
      bytecode_size: z.number().int().min(0),
      is_contract: z.boolean(),
    }),
    upstream: "eth_getCode",
    example: { path: { address: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48" } },
    errors: [],
  },
  contract: {
    id: "contract",
    method: "GET",
    path: "/api/chain/contract/{address}",
    price: "0.005",
    summary: "Contract introspection",
    description:
      "Probes name(), symbol(), decimals() and supportsInterface() in one Multicall3 eth_call. Fields the contract does not implement are null.",
    networks: CHAIN_NETWORKS,
    params: { path: z.strictObject({ address }), query: query({}) },
    data: z.object({
      address: addressOut,
      name: z.string().nullable(),
      symbol: z.string().nullable(),
      decimals: z.number().int().nullable(),
      interfaces: z.array(z.enum(["ERC20", "ERC721", "ERC1155"])),
    }),
    upstream: "eth_call (Multicall3 aggregate3: name, symbol, decimals, totalSupply, supportsInterface ×3)",
    example: { path: { address: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48" } },
    errors: [],
  },
  ens: {
    id: "ens",
    method: "GET",
    path: "/api/chain/ens/{input}",
    price: "0.005",
    summary: "ENS forward and reverse resolution",
    description:
      "A name ending in .eth resolves to an address (mode `forward`); an address resolves to its primary name (mode `reverse`, name in `name`). Both go through the ENS Universal Resolver.",
    networks: CHAIN_NETWORKS,
    params: { path: z.strictObject({ input: ensInput }), query: query({}) },
    data: z.union([
      z.object({ address: addressOut, input: z.string(), mode: z.literal("forward") }),
      z.object({
        address: addressOut,
        input: addressOut.meta({ description: "The address looked up, lower-case." }),
        mode: z.literal("reverse"),
        name: z.string(),
      }),
    ]),
    upstream: "eth_call (Universal Resolver resolveWithGateways / reverseWithGateways)",
    example: { path: { input: "vitalik.eth" } },
    errors: ["ens_name_not_found"],
  },
  call: {
    id: "call",
    method: "POST",
    path: "/api/chain/call",
    price: "0.005",
    summary: "Simulated contract call",
    description:
      "A simulated read via eth_call. No transaction is submitted. The optional `block` field overrides the block (default latest).",
    networks: CHAIN_NETWORKS,
    params: {
      query: query({}),
      body: z.strictObject({
        ...callBody,
        block: blockSelector.optional().meta({ description: "Block to run the call at. Default latest." }),
      }),
    },
    data: z.object({ result: hexData.meta({ description: "Raw ABI-encoded return data." }) }),
    upstream: "eth_call",
    example: {
      body: { to: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", data: "0x18160ddd" },
    },
    errors: ["execution_reverted", "block_not_found"],
  },
  estimateGas: {
    id: "estimateGas",
    method: "POST",
    path: "/api/chain/estimate-gas",
    price: "0.004",
    summary: "Gas estimate",
    description: "eth_estimateGas. A failing estimate usually means the transaction would revert (422).",
    networks: CHAIN_NETWORKS,
    params: {
      query: query({}),
      body: z.strictObject({
        to: callBody.to.optional(),
        data: callBody.data.optional(),
        from: callBody.from,
        value: callBody.value,
      }),
    },
    data: z.object({ gas_estimate: quantity }),
    upstream: "eth_estimateGas",
    example: {
      body: {
        from: "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045",
        to: "0x000000000000000000000000000000000000dEaD",
        value: "0x1",
      },
    },
    errors: ["execution_reverted"],
  },
  events: {
    id: "events",
    method: "GET",
    path: "/api/chain/events",
    price: "0.005",
    summary: "Raw contract logs",
    description:
      "Raw logs via eth_getLogs. `topic` filters topic0 (the event signature hash); `topic1` to `topic3` filter the indexed arguments.",
    networks: CHAIN_NETWORKS,
    params: {
      query: query({
        contract: address.optional().meta({ description: "Contract filter." }),
        topic: hash32.optional().meta({ description: "Topic0 filter, the event signature hash." }),
        topic1: hash32.optional().meta({ description: "Topic1 filter (first indexed argument)." }),
        topic2: hash32.optional().meta({ description: "Topic2 filter." }),
        topic3: hash32.optional().meta({ description: "Topic3 filter." }),
        ...logFilter,
      }).superRefine(blockOrder),
    },
    data: z.object({ count: z.number().int().min(0), logs: z.array(log) }),
    upstream: "eth_getLogs",
    example: {
      query: {
        topic: "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
        from_block: "latest",
      },
    },
    errors: LOG_ERRORS,
  },
} as const satisfies Record<string, Endpoint>;
