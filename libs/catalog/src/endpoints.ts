import { z } from "zod";
import {
  address,
  addressOut,
  blockSelector,
  decimalAmount,
  ensInput,
  hash32,
  hexData,
  quantity,
  queryInt,
  tokenId,
  weiHex,
} from "./formats.ts";
import { ALL_NETWORKS, CHAIN_NETWORKS, DEFAULT_NETWORK } from "./networks.ts";

/**
 * One description per endpoint. Routing, validation, 402 prices, /api/pricing,
 * /api/networks, /openapi.json, /llms.txt and the rpc-proxy's operation table are
 * all derived from this list; nothing about an endpoint is written anywhere else.
 */
export interface Endpoint {
  /** Operation id, shared with rpc-proxy's operation table. */
  id: string;
  method: "GET" | "POST";
  /** Path template as the spec and `meta.endpoint` show it. */
  path: string;
  /** Fixed price in USD, as a decimal string. */
  price: string;
  summary: string;
  description: string;
  /** Networks the endpoint serves. */
  networks: readonly string[];
  params: {
    path?: z.ZodObject;
    query: z.ZodObject;
    body?: z.ZodObject;
  };
  /** Schema of the envelope's `data` on success. */
  data: z.ZodType;
  /** JSON-RPC methods used, in one upstream round trip. */
  upstream: string;
  /** A worked example for docs: path values, query string, body. */
  example: { path?: Record<string, string>; query?: Record<string, string>; body?: Record<string, string> };
  /** Error codes this endpoint can answer with besides the common ones. */
  errors: readonly string[];
}

const chainNetwork = z
  .enum(CHAIN_NETWORKS, { error: `expected one of ${CHAIN_NETWORKS.join(", ")}` })
  .default(DEFAULT_NETWORK)
  .meta({ description: `Network, one of ${CHAIN_NETWORKS.join(", ")}. Default ${DEFAULT_NETWORK}.` });

const anyNetwork = z
  .enum(ALL_NETWORKS, { error: `expected one of ${ALL_NETWORKS.join(", ")}` })
  .default(DEFAULT_NETWORK)
  .meta({ description: `Network, one of ${ALL_NETWORKS.join(", ")}. Default ${DEFAULT_NETWORK}.` });

/** Query schema with the `network` parameter every endpoint takes. */
function query<S extends z.ZodRawShape>(shape: S, network = chainNetwork) {
  return z.strictObject({ ...shape, network });
}

const logFilter = {
  from_block: blockSelector.optional().meta({
    description: "Start block (block selector). Default: to_block minus the default range (see README).",
  }),
  to_block: blockSelector.optional().meta({ description: "End block (block selector). Default: latest." }),
};

/**
 * from_block after to_block, when both are known numbers (`earliest` is 0; other tags
 * move with the head and are left to rpc-proxy). Fields that failed their own check
 * still hold the raw string here, hence the hex test.
 */
function blockOrder(value: { from_block?: string; to_block?: string }, ctx: z.RefinementCtx): void {
  const numberOf = (s: string | undefined) =>
    s === "earliest" ? 0n : s !== undefined && /^0x[0-9a-f]+$/.test(s) ? BigInt(s) : undefined;
  const from = numberOf(value.from_block);
  const to = numberOf(value.to_block);
  if (from !== undefined && to !== undefined && from > to) {
    ctx.addIssue({ code: "custom", path: ["from_block"], message: "must not be after to_block" });
  }
}

const LOG_ERRORS = ["block_range_too_large", "result_too_large"] as const;

const transfer = z.object({
  block_number: quantity,
  from: addressOut,
  to: addressOut,
  token: addressOut,
  tx_hash: hash32,
  value: decimalAmount,
});

const log = z.object({
  address: addressOut,
  block_number: quantity,
  data: hexData,
  topics: z.array(hash32),
  tx_hash: hash32,
});

const nullableQuantity = quantity.nullable();

const receiptLog = log.extend({
  log_index: quantity,
});

const callBody = {
  to: address.meta({ description: "Target contract address." }),
  data: hexData.meta({ description: "ABI-encoded calldata, hex." }),
  from: address.optional().meta({ description: "Caller address." }),
  value: weiHex.optional().meta({ description: "msg.value in wei, hex." }),
};

export const ENDPOINTS = [
  {
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
  {
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
  {
    id: "blockNumber",
    method: "GET",
    path: "/api/chain/block-number",
    price: "0.001",
    summary: "Latest block number",
    description: "The latest block height via eth_blockNumber.",
    networks: CHAIN_NETWORKS,
    params: { query: query({}) },
    data: z.object({ block_number: quantity, network: z.string() }),
    upstream: "eth_blockNumber",
    example: {},
    errors: [],
  },
  {
    id: "block",
    method: "GET",
    path: "/api/chain/block/{number}",
    price: "0.003",
    summary: "Block header and transaction hashes",
    description: "A block header plus its transaction hashes via eth_getBlockByNumber.",
    networks: CHAIN_NETWORKS,
    params: {
      path: z.strictObject({ number: blockSelector }),
      query: query({}),
    },
    data: z.object({
      gas_limit: quantity,
      gas_used: quantity,
      hash: hash32.nullable().meta({ description: "null for the pending block." }),
      number: quantity.nullable().meta({ description: "null for the pending block on some nodes." }),
      parent_hash: hash32,
      timestamp: quantity,
      transactions: z.array(hash32).meta({ description: "Hashes of the block's transactions, in order." }),
    }),
    upstream: "eth_getBlockByNumber (hashes only)",
    example: { path: { number: "latest" } },
    errors: ["block_not_found"],
  },
  {
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
  {
    id: "chainId",
    method: "GET",
    path: "/api/chain/chain-id",
    price: "0.001",
    summary: "EIP-155 chain id",
    description: "The EIP-155 chain id via eth_chainId. Mainnet returns 0x1, Sepolia 0xaa36a7.",
    networks: CHAIN_NETWORKS,
    params: { query: query({}) },
    data: z.object({ chain_id: quantity, network: z.string() }),
    upstream: "eth_chainId",
    example: { query: { network: "sepolia" } },
    errors: [],
  },
  {
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
  {
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
  {
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
  {
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
  {
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
  {
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
  {
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
  {
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
  {
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
  {
    id: "networkInfo",
    method: "GET",
    path: "/api/chain/network-info",
    price: "0.003",
    summary: "Chain id, head block and gas price",
    description:
      "eth_chainId, eth_blockNumber and eth_gasPrice in one JSON-RPC batch. Also serves the third network.",
    networks: ALL_NETWORKS,
    params: { query: query({}, anyNetwork) },
    data: z.object({ chain_id: quantity, block_number: quantity, gas_price: quantity, network: z.string() }),
    upstream: "eth_chainId + eth_blockNumber + eth_gasPrice (one batch)",
    example: {},
    errors: [],
  },
  {
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
  {
    id: "receipt",
    method: "GET",
    path: "/api/chain/receipt/{hash}",
    price: "0.003",
    summary: "Transaction receipt",
    description:
      "A mined transaction's receipt via eth_getTransactionReceipt: status, gas, the created contract and the logs. An unknown or not yet mined transaction is 404 transaction_not_found.",
    networks: CHAIN_NETWORKS,
    params: { path: z.strictObject({ hash: hash32 }), query: query({}) },
    data: z.object({
      transaction_hash: hash32,
      block_hash: hash32,
      block_number: quantity,
      transaction_index: quantity,
      from: addressOut,
      to: addressOut.nullable().meta({ description: "null for a contract creation." }),
      contract_address: addressOut.nullable().meta({ description: "The contract created, else null." }),
      status: z.enum(["success", "reverted"]),
      gas_used: quantity,
      cumulative_gas_used: quantity,
      effective_gas_price: nullableQuantity,
      type: quantity,
      logs: z.array(receiptLog),
    }),
    upstream: "eth_getTransactionReceipt",
    example: { path: { hash: "0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060" } },
    errors: ["transaction_not_found"],
  },
  {
    id: "transaction",
    method: "GET",
    path: "/api/chain/transaction/{hash}",
    price: "0.003",
    summary: "Transaction by hash",
    description:
      "A transaction via eth_getTransactionByHash, mined or pending (then its block fields are null). An unknown hash is 404 transaction_not_found.",
    networks: CHAIN_NETWORKS,
    params: { path: z.strictObject({ hash: hash32 }), query: query({}) },
    data: z.object({
      hash: hash32,
      block_hash: hash32.nullable(),
      block_number: nullableQuantity,
      transaction_index: nullableQuantity,
      from: addressOut,
      to: addressOut.nullable().meta({ description: "null for a contract creation." }),
      value: quantity.meta({ description: "Wei, hex." }),
      nonce: quantity,
      gas: quantity,
      gas_price: nullableQuantity,
      max_fee_per_gas: nullableQuantity,
      max_priority_fee_per_gas: nullableQuantity,
      input: hexData,
      type: quantity,
      chain_id: nullableQuantity,
      pending: z.boolean(),
    }),
    upstream: "eth_getTransactionByHash",
    example: { path: { hash: "0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060" } },
    errors: ["transaction_not_found"],
  },
] as const satisfies readonly Endpoint[];

export type EndpointId = (typeof ENDPOINTS)[number]["id"];

const byId = new Map<string, Endpoint>(ENDPOINTS.map((e) => [e.id, e]));

export function endpointById(id: string): Endpoint | undefined {
  return byId.get(id);
}

/** Price in the settlement token's atomic units (USDC: 6 decimals). */
export function priceAtomic(price: string, decimals = 6): bigint {
  const [whole = "0", frac = ""] = price.split(".");
  return BigInt(whole + frac.padEnd(decimals, "0").slice(0, decimals));
}
