import { contracts, createClient, type MeshClientOptions } from "@tollgate/platform";

/** The gateway's view of rpc-proxy: run one catalog operation, get its `data`. */
export function createRpcProxyClient(address: string, mesh: MeshClientOptions, deadlineMs: number) {
  const client = createClient(contracts.rpcProxy().RpcProxyService, address, {
    service: "rpc-proxy",
    ...mesh,
    defaultDeadlineMs: deadlineMs,
    // Every chain call is an Execute: as messages on open streams, not a unary call each.
    exchange: { method: "Exchange" },
  });
  return {
    async execute(req: { requestId: string; operation: string; network: string; params: unknown }) {
      const res = await client.call("Execute", {
        requestId: req.requestId,
        operation: req.operation,
        network: req.network,
        paramsJson: JSON.stringify(req.params),
      });
      // Passed on as it came (envelope.ts sendDataJson): rpc-proxy wrote it with JSON.stringify.
      return { dataJson: res.dataJson, roundTrips: res.upstreamRoundTrips };
    },
    close: () => client.close(),
  };
}

export type RpcProxyClient = ReturnType<typeof createRpcProxyClient>;
