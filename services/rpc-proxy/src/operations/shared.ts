import { grpc, ServiceError } from "@tollgate/platform";
import {
  type Address,
  decodeAbiParameters,
  decodeFunctionResult,
  encodeFunctionData,
  type Hex,
  hexToString,
  multicall3Abi,
  trim,
} from "viem";
import type { RpcProxyConfig } from "../config.ts";
import { mapRpcError, revertError } from "../errors.ts";
import { type RpcCall, RpcError, type RpcOutcome } from "../upstream/jsonrpc.ts";
import type { CallContext, NetworkPool } from "../upstream/pool.ts";

export interface OperationContext {
  network: string;
  pool: NetworkPool;
  call: CallContext;
  config: RpcProxyConfig;
}

/** One catalog operation: validated params in, the endpoint's `data` object out. */
export type Operation = (params: Record<string, unknown>, ctx: OperationContext) => Promise<unknown>;

const MULTICALL3: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";

/** One JSON-RPC call; a node error becomes the catalog error for that method. */
export async function rpc<T = unknown>(ctx: OperationContext, method: string, params: unknown[]): Promise<T> {
  try {
    return (await ctx.pool.call({ method, params }, ctx.call)) as T;
  } catch (err) {
    if (err instanceof RpcError) throw mapRpcError(err, method);
    throw err;
  }
}

/** Several calls in one JSON-RPC batch (one round trip); the first error fails the lot. */
export async function rpcBatch(ctx: OperationContext, calls: RpcCall[]): Promise<unknown[]> {
  const outcomes: RpcOutcome[] = await ctx.pool.send(calls, ctx.call);
  return outcomes.map((o, i) => {
    if (!o.ok) throw mapRpcError(o.error, calls[i]!.method);
    return o.result;
  });
}

export interface SubCall {
  target: Address;
  callData: Hex;
}

export interface SubResult {
  success: boolean;
  returnData: Hex;
}

/**
 * Multicall3 aggregate3 with allowFailure on every call, encoded here as ONE eth_call
 * (viem's multicall action would split large batches into several eth_calls).
 */
export async function aggregate3(ctx: OperationContext, calls: SubCall[]): Promise<readonly SubResult[]> {
  const data = encodeFunctionData({
    abi: multicall3Abi,
    functionName: "aggregate3",
    args: [calls.map((c) => ({ target: c.target, allowFailure: true, callData: c.callData }))],
  });
  const result = await rpc<Hex>(ctx, "eth_call", [{ to: MULTICALL3, data }, "latest"]);
  if (result === "0x") {
    throw new ServiceError(
      grpc.status.UNKNOWN,
      "upstream_error",
      `Multicall3 is not deployed at ${MULTICALL3} on ${ctx.network}`,
    );
  }
  try {
    return decodeFunctionResult({ abi: multicall3Abi, functionName: "aggregate3", data: result });
  } catch {
    throw new ServiceError(
      grpc.status.UNKNOWN,
      "upstream_error",
      "the node sent a malformed Multicall3 result",
    );
  }
}

/** A sub-call that returned at least one ABI word (an EOA "answers" with empty data). */
export function answered(r: SubResult | undefined): boolean {
  return r?.success === true && r.returnData.length >= 66;
}

/** The first ABI word as an unsigned integer. */
export function word(r: SubResult): bigint {
  return BigInt(r.returnData.slice(0, 66));
}

/** decimals(): an integer up to 255, else null. */
export function decimalsOf(r: SubResult | undefined): number | null {
  if (!answered(r)) return null;
  const value = word(r!);
  return value <= 255n ? Number(value) : null;
}

/** name()/symbol(): an ABI string, or the bytes32 some early tokens return (MKR, SAI). */
export function textOf(r: SubResult | undefined): string | null {
  if (!r || !answered(r)) return null;
  try {
    const [text] = decodeAbiParameters([{ type: "string" }], r.returnData);
    return text;
  } catch {
    if (r.returnData.length !== 66) return null;
    try {
      return hexToString(trim(r.returnData, { dir: "right" }));
    } catch {
      return null;
    }
  }
}

/** A required sub-call failed: the contract reverted, or is no such contract at all. */
export function subCallFailure(r: SubResult | undefined, contract: string, fn: string): ServiceError {
  if (r && !r.success) return revertError(r.returnData);
  return new ServiceError(
    grpc.status.FAILED_PRECONDITION,
    "execution_reverted",
    `execution reverted: ${contract} returned no data for ${fn}`,
    { revert_data: r?.returnData ?? "0x", reason: `${fn} returned no data` },
  );
}

export function toQuantity(value: bigint): Hex {
  return `0x${value.toString(16)}`;
}
