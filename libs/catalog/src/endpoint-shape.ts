// The shape every endpoint is written in (Endpoint) and the schema pieces several endpoints share:
// the network parameter, log filters and their block order, transfer and log records, call bodies.
// The endpoints themselves are in endpoints-{accounts,chain,tokens}.ts, listed in endpoints.ts.
import { z } from "zod";
import {
  address,
  addressOut,
  blockSelector,
  decimalAmount,
  hash32,
  hexData,
  quantity,
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
  /**
   * The payment schemes (payment-verifier's names: "exact", "mpp-charge", ...) that may pay for it;
   * absent, every scheme the deployment accepts. Offers and credentials of other schemes are not
   * made or taken for it.
   */
  payWith?: readonly string[];
  /** It credits its price to an account's prepaid credits instead of calling a node (a top-up). */
  topUp?: true;
  /** The name payment-verifier prices it by (a JSON-RPC body's, with its methods); absent, `path`. */
  resource?: string;
  /** Plan units one request counts (a JSON-RPC batch: one per call); absent, 1. */
  calls?: number;
  /**
   * It changes the chain (a JSON-RPC body with a write method, RPC_WRITE_METHODS): its node call
   * never starts before its payment is verified.
   */
  writes?: true;
}

const chainNetwork = z
  .enum(CHAIN_NETWORKS, { error: `expected one of ${CHAIN_NETWORKS.join(", ")}` })
  .default(DEFAULT_NETWORK)
  .meta({ description: `Network, one of ${CHAIN_NETWORKS.join(", ")}. Default ${DEFAULT_NETWORK}.` });

export const anyNetwork = z
  .enum(ALL_NETWORKS, { error: `expected one of ${ALL_NETWORKS.join(", ")}` })
  .default(DEFAULT_NETWORK)
  .meta({ description: `Network, one of ${ALL_NETWORKS.join(", ")}. Default ${DEFAULT_NETWORK}.` });

/** Query schema with the `network` parameter every endpoint takes. */
export function query<S extends z.ZodRawShape>(shape: S, network = chainNetwork) {
  return z.strictObject({ ...shape, network });
}

export const logFilter = {
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
export function blockOrder(value: { from_block?: string; to_block?: string }, ctx: z.RefinementCtx): void {
  const numberOf = (s: string | undefined) =>
    s === "earliest" ? 0n : s !== undefined && /^0x[0-9a-f]+$/.test(s) ? BigInt(s) : undefined;
  const from = numberOf(value.from_block);
  const to = numberOf(value.to_block);
  if (from !== undefined && to !== undefined && from > to) {
    ctx.addIssue({ code: "custom", path: ["from_block"], message: "must not be after to_block" });
  }
}

export const LOG_ERRORS = ["block_range_too_large", "result_too_large"] as const;

export const transfer = z.object({
  block_number: quantity,
  from: addressOut,
  to: addressOut,
  token: addressOut,
  tx_hash: hash32,
  value: decimalAmount,
});

export const log = z.object({
  address: addressOut,
  block_number: quantity,
  data: hexData,
  topics: z.array(hash32),
  tx_hash: hash32,
});

export const nullableQuantity = quantity.nullable();

export const receiptLog = log.extend({
  log_index: quantity,
});

export const callBody = {
  to: address.meta({ description: "Target contract address." }),
  data: hexData.meta({ description: "ABI-encoded calldata, hex." }),
  from: address.optional().meta({ description: "Caller address." }),
  value: weiHex.optional().meta({ description: "msg.value in wei, hex." }),
};
