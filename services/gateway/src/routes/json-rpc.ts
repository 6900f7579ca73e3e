// POST /rpc/{network}: JSON-RPC 2.0 for the libraries agents already hold (viem, ethers,
// web3.py). The body is checked and priced from the catalog (libs/catalog json-rpc.ts); its
// relayable calls go to the node in one rpc-proxy request and the answers come back as the node
// gave them, ids echoed, no envelope. Calls refused here (a method not served, bad params) are
// answered in place, free. Who may make the call is decided by the same auth methods as every
// paid endpoint; their refusals keep their HTTP status and headers, with a JSON-RPC error body
// (envelope.ts).
import {
  checkRpcRequest,
  type Endpoint,
  pricedRpcEndpoint,
  RPC_ENDPOINT,
  RPC_PATH,
  type RpcItem,
  type RpcOptions,
} from "@tollgate/catalog";
import type { Request, Response } from "express";
import { failureOf, type Outcome } from "../auth/call.ts";
import type { RpcProxyClient } from "../clients/rpc-proxy.ts";
import { type JsonRpcReply, sendAgain, sendError } from "../envelope.ts";

/** The node's answer to one relayed call, as rpc-proxy passes it on. */
type NodeAnswer = { result: unknown } | { error: unknown };

/** The reply of a checked request: the node's answers in among the calls answered here. */
function replyOf(batch: boolean, items: readonly RpcItem[]): JsonRpcReply {
  return {
    batch,
    ids: items.map((i) => i.id),
    answer(dataJson) {
      const answers = JSON.parse(dataJson) as NodeAnswer[];
      let k = 0;
      const out = items.map((item) =>
        item.ok
          ? { jsonrpc: "2.0", id: item.id, ...answers[k++] }
          : { jsonrpc: "2.0", id: item.id, error: item.error },
      );
      return JSON.stringify(batch ? out : out[0]);
    },
  };
}

export interface JsonRpcCall {
  endpoint: Endpoint;
  network: string;
  execute: () => Promise<Outcome>;
}

/**
 * Reads a JSON-RPC request: the call to make (its endpoint priced for the body), or undefined once
 * answered (a refusal of the whole body, or nothing relayable: every call answered here, free).
 */
export function readJsonRpc(
  rpc: RpcProxyClient,
  req: Request,
  res: Response,
  opts: RpcOptions,
): JsonRpcCall | undefined {
  res.locals.endpoint = RPC_PATH;
  res.setHeader("Cache-Control", "no-store");
  const network = String(req.params.network ?? "");
  if (!(RPC_ENDPOINT.networks as readonly string[]).includes(network)) {
    sendError(res, "invalid_parameter", `network: expected one of ${RPC_ENDPOINT.networks.join(", ")}`, {
      parameter: "network",
    });
    return undefined;
  }
  if (
    req.is(["application/json", "application/*+json"]) !== "application/json" &&
    !req.is("application/*+json")
  ) {
    sendError(res, "unsupported_media_type", "body: expected Content-Type: application/json", {
      parameter: "body",
    });
    return undefined;
  }
  const checked = checkRpcRequest(req.body, opts);
  if ("refused" in checked) {
    sendError(res, "invalid_parameter", `body: ${checked.refused}`, { parameter: "body" });
    return undefined;
  }
  const reply = replyOf(checked.batch, checked.items);
  res.locals.jsonRpc = reply;
  const relayed = checked.items.filter((i): i is Extract<RpcItem, { ok: true }> => i.ok);
  if (relayed.length === 0) {
    sendAgain(res, 200, reply.answer("[]"));
    return undefined;
  }
  const calls = relayed.map(({ method, params }) => ({ method, params }));
  const execute = (): Promise<Outcome> =>
    rpc
      .execute({ requestId: res.locals.requestId, operation: RPC_ENDPOINT.id, network, params: { calls } })
      .then((r): Outcome => ({ ok: true, dataJson: r.dataJson }), failureOf);
  return { endpoint: pricedRpcEndpoint(relayed.map((i) => i.method)), network, execute };
}
