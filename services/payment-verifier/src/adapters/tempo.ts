// The Tempo chain as mppx's server methods reach it: one viem client (Tempo serializers) per
// process, on MPP_TEMPO_RPC_URL, carrying the server's own account when it has one (the session
// channels' operator signs settle and close with it).
import { type Account, createClient, http } from "viem";
import { tempo } from "viem/tempo/chains";

export function tempoClient(opts: { rpcUrl: string; chainId: number; account?: Account | undefined }) {
  return createClient({
    chain: { ...tempo, id: opts.chainId },
    transport: http(opts.rpcUrl, { timeout: 10_000, retryCount: 1 }),
    ...(opts.account ? { account: opts.account } : {}),
  });
}

export type TempoClient = ReturnType<typeof tempoClient>;
