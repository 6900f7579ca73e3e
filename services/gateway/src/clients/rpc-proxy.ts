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
    /** Each network's quorum reads (rpc-proxy's CONSENSUS_<NETWORK>), for /api/pricing. */
    async quorums(): Promise<{ network: string; methods: string[]; k: number; n: number }[]> {
      const res = await client.call("ListNetworks", {}, { deadlineMs: 2_000 });
      return res.networks.flatMap((n) =>
        n.quorum && n.quorum.methods.length > 0
          ? [{ network: n.name, methods: n.quorum.methods, k: n.quorum.k, n: n.quorum.n }]
          : [],
      );
    },
    close: () => client.close(),
  };
}

export type RpcProxyClient = ReturnType<typeof createRpcProxyClient>;
