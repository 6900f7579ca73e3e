// The Tempo chain as mppx's server methods reach it: one viem client (Tempo serializers) per
// process, on MPP_TEMPO_RPC_URL, carrying the server's own account when it has one (the session
// channels' operator signs settle and close with it).
import { type Account, createClient, type Hex, http, keccak256, type Transport } from "viem";
import { tempo } from "viem/tempo/chains";

/**
 * `http` whose broadcast of a signed transaction is idempotent: a node that refuses it (already
 * known, nonce used) but has it, pending or mined, answers its hash, as a first broadcast would.
 * mppx broadcasts a session's signed open or top-up again when a replica takes over a settlement
 * whose owner died after sending it (or when our own send's answer was lost and retried), and would
 * otherwise answer the call failed though its deposit is on chain. (A charge is sent with
 * eth_sendRawTransactionSync, not covered: mpp-charge's takeover finds its transaction itself.)
 */
function idempotentBroadcast(inner: Transport): Transport {
  return (params) => {
    const transport = inner(params);
    const request = (async (args: { method: string; params?: unknown }) => {
      try {
        return await transport.request(args as never);
      } catch (err) {
        const raw = (args.params as unknown[] | undefined)?.[0];
        if (args.method !== "eth_sendRawTransaction" || typeof raw !== "string") throw err;
        const hash = keccak256(raw as Hex);
        const known = await transport
          .request({ method: "eth_getTransactionByHash", params: [hash] } as never)
          .catch(() => null);
        if (known) return hash;
        throw err;
      }
    }) as typeof transport.request;
    return { ...transport, request };
  };
}

export function tempoClient(opts: { rpcUrl: string; chainId: number; account?: Account | undefined }) {
  return createClient({
    chain: { ...tempo, id: opts.chainId },
    transport: idempotentBroadcast(http(opts.rpcUrl, { timeout: 10_000, retryCount: 1 })),
    ...(opts.account ? { account: opts.account } : {}),
  });
}

export type TempoClient = ReturnType<typeof tempoClient>;
