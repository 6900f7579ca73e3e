// The JSON-RPC relay (POST /rpc/{network}): the calls the gateway checked, sent to the node as
// they are in one round trip (failover, breaker and head tracking as for every operation; a write
// goes to one node, once: README, Writes), and
// the node's answers returned as they are, a JSON-RPC error included. Only the catalog's methods are
// relayed, checked again here (eth_sendRawTransaction only reaches here where the gateway serves it); an eth_getLogs range is held to the cap of
// /api/events before anything is sent.
import { checkRpcRequest } from "@tollgate/catalog";
import { grpc, ServiceError } from "@tollgate/platform";
import type { RpcCall } from "../upstream/jsonrpc.ts";
import { resolveRange } from "./logs.ts";
import type { OperationContext } from "./shared.ts";

const invalid = (message: string) =>
  new ServiceError(grpc.status.INVALID_ARGUMENT, "invalid_parameter", message, { parameter: "body" });

/** `params.calls`: [{ method, params }], relayed in order; the answer is one object per call. */
export async function relay(params: { calls?: unknown }, ctx: OperationContext): Promise<unknown[]> {
  const raw = params.calls;
  if (!Array.isArray(raw)) throw invalid("calls: expected an array");
  // The gateway decides whether a write method is served (RPC_SEND_RAW_TRANSACTION): it is the gate.
  const checked = checkRpcRequest(
    raw.map((c, id) => ({ ...(c as object), jsonrpc: "2.0", id })),
    { sendRawTransaction: true },
  );
  if ("refused" in checked) throw invalid(checked.refused);
  const calls: RpcCall[] = [];
  for (const item of checked.items) {
    if (!item.ok) throw invalid(`calls[${item.id}]: ${item.error.message}`);
    if (item.method === "eth_getLogs") {
      const filter = item.params[0] as { fromBlock?: string; toBlock?: string; blockHash?: string };
      // One block by hash is always within the cap; a range is read against the head, as /api/events.
      if (!filter.blockHash)
        resolveRange({ from_block: filter.fromBlock ?? "latest", to_block: filter.toBlock ?? "latest" }, ctx);
    }
    calls.push({ method: item.method, params: item.params });
  }
  const outcomes = await ctx.pool.send(calls, ctx.call);
  return outcomes.map((o) =>
    o.ok
      ? { result: o.result }
      : {
          error: {
            code: o.error.code,
            message: o.error.message,
            ...(o.error.data === undefined ? {} : { data: o.error.data }),
          },
        },
  );
}
