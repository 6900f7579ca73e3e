// The JSON-RPC endpoint (`POST /rpc/{network}`): the read methods it relays to the node as sent,
// each with its price, and the bounds of a request. One fact each: the gateway validates and
// prices a body from here, payment-verifier prices the same body by its resource name, rpc-proxy
// relays only these methods, and /api/pricing, /openapi.json and /llms.txt list them.
import { z } from "zod";
import type { Endpoint } from "./endpoint-shape.ts";
import { BLOCK_TAGS, hash32, hexData } from "./formats.ts";
import { ALL_NETWORKS } from "./networks.ts";

export const RPC_PATH = "/rpc/{network}";
/** Calls in one batch, at most: a larger batch is refused before any node call. */
export const RPC_BATCH_MAX = 100;
/** Blocks `eth_feeHistory` may ask for at once (what common nodes allow). */
const FEE_HISTORY_MAX = 1024;

const ADDRESS = /^0x[a-fA-F0-9]{40}$/;
const QUANTITY = /^0x(0|[1-9a-fA-F][0-9a-fA-F]{0,15})$/;
const tags = new Set<string>(BLOCK_TAGS);

/** eth_feeHistory's block count: 1 to FEE_HISTORY_MAX, hex or a number (nodes take both). */
const feeBlocks = z.union([
  z
    .string()
    .regex(QUANTITY)
    .refine((v) => Number.parseInt(v, 16) >= 1 && Number.parseInt(v, 16) <= FEE_HISTORY_MAX, {
      error: `expected a block count from 1 to ${FEE_HISTORY_MAX}`,
    }),
  z.number().int().min(1).max(FEE_HISTORY_MAX),
]);
/** Reward percentiles: 0 to 100, strictly increasing (what nodes accept). */
const percentiles = z
  .array(z.number().min(0).max(100))
  .max(100)
  .refine((ps) => ps.every((p, i) => i === 0 || p > (ps[i - 1] ?? 0)), {
    error: "expected reward percentiles in increasing order",
  });

/** A JSON-RPC block parameter: a hex block number or a tag (EIP-1898 objects are not relayed). */
const block = z.string().refine((v) => tags.has(v) || QUANTITY.test(v), {
  error: `expected a block: a hex block number or one of ${BLOCK_TAGS.join(", ")}`,
});
const address = z
  .string()
  .regex(ADDRESS, { error: "expected an address (0x followed by 40 hex characters)" });
const slot = z
  .string()
  .regex(/^0x[a-fA-F0-9]{1,64}$/, { error: "expected a storage slot (hex, at most 32 bytes)" });
const topic = z.union([hash32, z.null(), z.array(hash32.nullable()).max(8)]);
/** A call object (eth_call, eth_estimateGas): what nodes take, nothing else. */
const callObject = z.strictObject({
  from: address.optional(),
  to: address.nullable().optional(),
  gas: z.string().regex(QUANTITY).optional(),
  gasPrice: z.string().regex(QUANTITY).optional(),
  maxFeePerGas: z.string().regex(QUANTITY).optional(),
  maxPriorityFeePerGas: z.string().regex(QUANTITY).optional(),
  value: z
    .string()
    .regex(/^0x[a-fA-F0-9]{1,64}$/)
    .optional(),
  data: hexData.optional(),
  input: hexData.optional(),
  nonce: z.string().regex(QUANTITY).optional(),
  type: z.string().regex(QUANTITY).optional(),
  chainId: z.string().regex(QUANTITY).optional(),
  accessList: z
    .array(z.strictObject({ address, storageKeys: z.array(hash32).max(256) }))
    .max(64)
    .optional(),
});
const logFilter = z
  .strictObject({
    fromBlock: block.optional(),
    toBlock: block.optional(),
    blockHash: hash32.optional(),
    address: z.union([address, z.array(address).max(64)]).optional(),
    topics: z.array(topic).max(4).optional(),
  })
  // Nodes refuse both (and the range cap reads a filter with a blockHash as one block).
  .refine((f) => f.blockHash === undefined || (f.fromBlock === undefined && f.toBlock === undefined), {
    error: "blockHash: expected either blockHash or fromBlock/toBlock, not both",
  });
/** Positional parameters: required ones first, then optional ones (a JSON-RPC array may stop early). */
const none = z.tuple([]);
/** A call object and an optional block (nodes read a missing one as latest). */
const atBlock = (first: z.ZodType) => z.union([z.tuple([first]), z.tuple([first, block])]);
/** State at a block: the block is required (geth and anvil refuse the call without it). */
const stateAt = z.tuple([address, block]);

/** A relayed method: its price (USD decimal, as every price) and its parameters. */
export interface RpcMethod {
  price: string;
  params: z.ZodType<unknown[]>;
  description: string;
}

export const RPC_METHODS = {
  eth_chainId: { price: "0.001", params: none, description: "the chain id" },
  eth_blockNumber: { price: "0.001", params: none, description: "the latest block number" },
  eth_gasPrice: { price: "0.001", params: none, description: "the gas price" },
  eth_maxPriorityFeePerGas: { price: "0.001", params: none, description: "the priority fee" },
  eth_feeHistory: {
    price: "0.001",
    params: z.union([z.tuple([feeBlocks, block]), z.tuple([feeBlocks, block, percentiles])]),
    description: "base fees and rewards of recent blocks",
  },
  net_version: { price: "0.001", params: none, description: "the network id" },
  web3_clientVersion: { price: "0.001", params: none, description: "the node's client version" },
  eth_getBalance: { price: "0.003", params: stateAt, description: "an address's balance" },
  eth_getCode: { price: "0.003", params: stateAt, description: "an address's code" },
  eth_getTransactionCount: { price: "0.003", params: stateAt, description: "an address's nonce" },
  eth_getStorageAt: {
    price: "0.003",
    params: z.tuple([address, slot, block]),
    description: "a storage slot",
  },
  eth_getBlockByNumber: {
    price: "0.003",
    params: z.tuple([block, z.boolean()]),
    description: "a block by number",
  },
  eth_getBlockByHash: {
    price: "0.003",
    params: z.tuple([hash32, z.boolean()]),
    description: "a block by hash",
  },
  eth_getTransactionByHash: { price: "0.003", params: z.tuple([hash32]), description: "a transaction" },
  eth_getTransactionReceipt: { price: "0.003", params: z.tuple([hash32]), description: "a receipt" },
  eth_estimateGas: { price: "0.004", params: atBlock(callObject), description: "a gas estimate" },
  eth_call: { price: "0.005", params: atBlock(callObject), description: "a read-only call" },
  eth_getLogs: {
    price: "0.005",
    params: z.tuple([logFilter]),
    description: "event logs (the same block-range cap as /api/events)",
  },
} as const satisfies Record<string, RpcMethod>;

/**
 * Methods that change the chain, relayed only where the operator turns them on (the gateway's
 * `RPC_SEND_RAW_TRANSACTION`); off, they are answered -32601 like any method not served.
 */
export const RPC_WRITE_METHODS = {
  eth_sendRawTransaction: {
    price: "0.01",
    params: z.tuple([
      z.string().regex(/^0x([0-9a-fA-F]{2}){1,65536}$/, {
        error: "expected a signed transaction (hex, at most 64 KiB)",
      }),
    ]),
    description: "broadcasts a signed transaction (only where the operator turned it on)",
  },
} as const satisfies Record<string, RpcMethod>;

type RpcMethodName = keyof typeof RPC_METHODS | keyof typeof RPC_WRITE_METHODS;

/** A method's description, served or not (a write method is priced even where it is off). */
function methodOf(name: string): RpcMethod | undefined {
  if (Object.hasOwn(RPC_METHODS, name)) return RPC_METHODS[name as keyof typeof RPC_METHODS];
  if (Object.hasOwn(RPC_WRITE_METHODS, name))
    return RPC_WRITE_METHODS[name as keyof typeof RPC_WRITE_METHODS];
  return undefined;
}

function isRpcMethod(name: string): name is RpcMethodName {
  return methodOf(name) !== undefined;
}

/** What a request may relay: the read methods, and the write ones where the operator allows them. */
export interface RpcOptions {
  sendRawTransaction?: boolean;
}

/** JSON-RPC 2.0's own error codes, as the endpoint answers them. */
export const RPC_ERRORS = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  /** Refused by Tollgate (payment, key, quota, limits): the `data.code` names the API's error code. */
  refused: -32000,
} as const;

/** A request's id as echoed: a string or number as sent, bounded; null when absent or unusable. */
type RpcId = string | number | null;

/** One call of a request, checked: relayed (and priced), or answered here with an error. */
export type RpcItem =
  | { ok: true; id: RpcId; method: RpcMethodName; params: unknown[] }
  | { ok: false; id: RpcId; error: { code: number; message: string } };

/** A request body, checked: its calls in order and whether it was a batch. */
export interface RpcRequest {
  batch: boolean;
  items: RpcItem[];
}

function idOf(raw: unknown): RpcId | undefined {
  if (raw === null) return null;
  if (typeof raw === "string") return raw.length <= 256 ? raw : undefined;
  if (typeof raw === "number") return Number.isSafeInteger(raw) ? raw : undefined;
  return undefined;
}

function checkCall(raw: unknown, opts: RpcOptions): RpcItem {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw))
    return {
      ok: false,
      id: null,
      error: { code: RPC_ERRORS.invalidRequest, message: "expected a request object" },
    };
  const call = raw as Record<string, unknown>;
  const id = idOf(call.id);
  const bad = (code: number, message: string): RpcItem => ({
    ok: false,
    id: id ?? null,
    error: { code, message },
  });
  if (id === undefined)
    return bad(
      RPC_ERRORS.invalidRequest,
      "id: expected a string (at most 256 characters), a safe integer or null (notifications are not relayed)",
    );
  if (call.jsonrpc !== "2.0") return bad(RPC_ERRORS.invalidRequest, 'jsonrpc: expected "2.0"');
  if (typeof call.method !== "string") return bad(RPC_ERRORS.invalidRequest, "method: expected a string");
  const served =
    Object.hasOwn(RPC_METHODS, call.method) || (opts.sendRawTransaction === true && isRpcMethod(call.method));
  if (!served || !isRpcMethod(call.method))
    return bad(
      RPC_ERRORS.methodNotFound,
      `method not found or not served here: ${call.method.slice(0, 64)} (served: see /api/pricing)`,
    );
  const params = call.params === undefined ? [] : call.params;
  const checked = (methodOf(call.method) as RpcMethod).params.safeParse(params);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    const at = issue?.path.length ? `params[${issue.path.join("][")}]` : "params";
    return bad(RPC_ERRORS.invalidParams, `${at}: ${issue?.message ?? "invalid"}`);
  }
  return { ok: true, id, method: call.method, params: params as unknown[] };
}

/**
 * Checks a parsed body: one call or a batch of 1..RPC_BATCH_MAX. A refusal of the whole body
 * (not a request, an empty or oversized batch) is a string naming why; otherwise every call is
 * either relayable or answered with its own JSON-RPC error.
 */
export function checkRpcRequest(body: unknown, opts: RpcOptions = {}): RpcRequest | { refused: string } {
  if (Array.isArray(body)) {
    if (body.length === 0) return { refused: "an empty batch" };
    if (body.length > RPC_BATCH_MAX)
      return {
        refused: `a batch of ${body.length} calls; at most ${RPC_BATCH_MAX} are served in one request`,
      };
    return { batch: true, items: body.map((c) => checkCall(c, opts)) };
  }
  if (body === null || typeof body !== "object")
    return { refused: "expected a JSON-RPC request object or a batch (array)" };
  return { batch: false, items: [checkCall(body, opts)] };
}

/** A body's price: the sum of its relayed calls' prices (USD decimal, 6 places at most). */
export function rpcPrice(methods: readonly string[]): string {
  let micro = 0;
  for (const m of methods) micro += Math.round(Number(methodOf(m)?.price ?? "0") * 1e6);
  return (micro / 1e6).toFixed(6).replace(/\.?0+$/, "");
}

/**
 * The name payment-verifier prices a body by: the path template and its relayed methods counted,
 * in a canonical order (`/rpc/{network}?calls=eth_call*2,eth_chainId`). The same body always has
 * the same name, so a client's paid retry matches the 402's price.
 */
function rpcResource(methods: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const m of methods) counts.set(m, (counts.get(m) ?? 0) + 1);
  const parts = [...counts].sort(([a], [b]) => (a < b ? -1 : 1)).map(([m, n]) => (n > 1 ? `${m}*${n}` : m));
  return `${RPC_PATH}?calls=${parts.join(",")}`;
}

const RPC_RESOURCE = /^\/rpc\/\{network\}\?calls=([a-zA-Z0-9_*,]{1,2000})$/;

/** The methods a resource name counts (undefined when it is not one, or names a method not served). */
export function rpcMethodsOf(name: string): string[] | undefined {
  const m = RPC_RESOURCE.exec(name);
  if (!m) return undefined;
  const methods: string[] = [];
  for (const part of (m[1] ?? "").split(",")) {
    const [method = "", times = "1"] = part.split("*");
    const n = Number(times);
    if (!isRpcMethod(method) || !Number.isInteger(n) || n < 1 || methods.length + n > RPC_BATCH_MAX)
      return undefined;
    for (let i = 0; i < n; i++) methods.push(method);
  }
  return methods;
}

const rpcId = { type: ["string", "integer", "null"], description: "Echoed in the answer." };
const rpcCallSchema = {
  type: "object",
  required: ["jsonrpc", "method", "id"],
  properties: {
    jsonrpc: { const: "2.0" },
    id: rpcId,
    method: { type: "string", enum: Object.keys(RPC_METHODS) },
    params: { type: "array" },
  },
};
const rpcAnswerSchema = {
  type: "object",
  required: ["jsonrpc", "id"],
  properties: {
    jsonrpc: { const: "2.0" },
    id: rpcId,
    result: { description: "The node's result, as the node sent it." },
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: { type: "integer" },
        message: { type: "string" },
        data: {
          description: "The node's, or for a refusal by Tollgate `{code, ...}`: the API's error code.",
        },
      },
    },
  },
};

/** JSON Schema of a request body: one call or a batch (OpenAPI and the bazaar extension). */
export const RPC_REQUEST_JSON_SCHEMA = {
  oneOf: [rpcCallSchema, { type: "array", items: rpcCallSchema, minItems: 1, maxItems: RPC_BATCH_MAX }],
};
/** JSON Schema of an answer: the node's, one per call of a batch. */
export const RPC_ANSWER_JSON_SCHEMA = {
  oneOf: [rpcAnswerSchema, { type: "array", items: rpcAnswerSchema, maxItems: RPC_BATCH_MAX }],
};

/** The endpoint as docs and the call path see it; a body's own price comes from rpcPrice. */
export const RPC_ENDPOINT = {
  id: "jsonRpc",
  method: "POST",
  path: RPC_PATH,
  price: "0.001",
  summary: "JSON-RPC 2.0 (viem, ethers, web3.py unchanged)",
  description:
    "A JSON-RPC request or batch relayed to the node as sent and answered as the node answers (no envelope). Read methods only, each with its price; a batch costs the sum of its calls.",
  // Every network, the third chain's too (its REST endpoints are network-info only).
  networks: ALL_NETWORKS,
  params: {
    path: z.strictObject({ network: z.enum(ALL_NETWORKS) }),
    query: z.strictObject({}),
  },
  data: z.unknown(),
  upstream: "the body's own methods, in one round trip",
  // The cheapest call: what the discovery list's offers are priced at.
  example: { path: { network: "ethereum" }, body: { jsonrpc: "2.0", id: "1", method: "eth_blockNumber" } },
  errors: ["block_range_too_large"],
} as const satisfies Endpoint;

/** A body's endpoint: the same description with the body's price and the name it is priced by. */
export function pricedRpcEndpoint(methods: readonly string[]): Endpoint {
  const priced = {
    ...RPC_ENDPOINT,
    price: rpcPrice(methods),
    resource: rpcResource(methods),
    calls: methods.length,
  };
  return methods.some((m) => Object.hasOwn(RPC_WRITE_METHODS, m)) ? { ...priced, writes: true } : priced;
}
