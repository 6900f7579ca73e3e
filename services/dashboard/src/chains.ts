// How a payment's chain is shown: its name, and a link to the transaction on its explorer.
// The rule: the chain's name and default explorer come from viem's definition of the chains x402
// and MPP settle on (SETTLEMENT_CHAINS, by the CAIP-2 id's chain number: eip155:84532 → "Base
// Sepolia", https://sepolia.basescan.org/tx/<hash>); a chain
// the operator lists in LOCAL_CHAINS (a devnet that borrows a public chain id) is "<name> (local)"
// with no link, since no public explorer has its transactions; a chain viem does not know is
// named by its CAIP-2 id, with no link. (A list, not all of viem/chains: its 700-odd modules would
// stay in the bundle and in memory.)
import {
  arbitrum,
  arbitrumSepolia,
  avalanche,
  avalancheFuji,
  base,
  baseSepolia,
  mainnet,
  optimism,
  optimismSepolia,
  polygon,
  polygonAmoy,
  sepolia,
  tempo,
  tempoModerato,
} from "viem/chains";

const SETTLEMENT_CHAINS = [
  arbitrum,
  arbitrumSepolia,
  avalanche,
  avalancheFuji,
  base,
  baseSepolia,
  mainnet,
  optimism,
  optimismSepolia,
  polygon,
  polygonAmoy,
  sepolia,
  tempo,
  tempoModerato,
];

interface ChainView {
  name: string;
  /** The explorer's base URL; undefined: no link. */
  explorer: string | undefined;
}

const BY_ID = new Map<number, ChainView>(
  SETTLEMENT_CHAINS.map((c) => [
    c.id,
    { name: c.name, explorer: c.blockExplorers?.default.url.replace(/\/+$/, "") },
  ]),
);

export function chainNamer(localChains: readonly string[]) {
  const local = new Set(localChains);
  const view = (caip2: string): ChainView => {
    const m = /^eip155:(\d+)$/.exec(caip2);
    const c = m ? BY_ID.get(Number(m[1])) : undefined;
    if (!c) return { name: caip2, explorer: undefined };
    if (local.has(caip2)) return { name: `${c.name} (local)`, explorer: undefined };
    return c;
  };
  return (caip2: string, transaction: string | null) => {
    const v = view(caip2);
    return {
      name: v.name,
      transactionUrl:
        transaction && v.explorer && /^0x[0-9a-fA-F]{64}$/.test(transaction)
          ? `${v.explorer}/tx/${transaction}`
          : null,
    };
  };
}
