import type { Hex } from "viem";
import { malformedAnswer } from "../errors.ts";
import { type Operation, rpc } from "./shared.ts";

interface TxFields {
  to?: string;
  data?: string;
  from?: string;
  value?: string;
}

/** The transaction object JSON-RPC takes, without the fields the caller left out. */
function tx(params: TxFields): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of ["from", "to", "value", "data"] as const) {
    const value = params[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

export const call: Operation = async (params, ctx) => {
  const p = params as TxFields & { block?: string };
  const result = await rpc<Hex>(ctx, "eth_call", [tx(p), p.block ?? "latest"]);
  if (typeof result !== "string") throw malformedAnswer("eth_call result");
  return { result };
};

export const estimateGas: Operation = async (params, ctx) => {
  const result = await rpc<Hex>(ctx, "eth_estimateGas", [tx(params as TxFields)]);
  if (typeof result !== "string") throw malformedAnswer("gas estimate");
  return { gas_estimate: result };
};

export const code: Operation = async (params, ctx) => {
  const { address } = params as { address: string };
  const result = await rpc<Hex>(ctx, "eth_getCode", [address, "latest"]);
  if (typeof result !== "string" || !result.startsWith("0x")) throw malformedAnswer("eth_getCode result");
  const size = (result.length - 2) / 2;
  return { address, code: result, bytecode_size: size, is_contract: size > 0 };
};
