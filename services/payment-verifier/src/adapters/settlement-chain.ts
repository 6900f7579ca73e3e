// Reads of the x402 settlement chain that the exact scheme makes itself, outside the facilitator:
// whether an address holds code (a smart wallet's signature cannot be checked by recovery alone)
// and whether an EIP-3009 authorization was used, and in which transaction.
import {
  type Address,
  createPublicClient,
  defineChain,
  type Hex,
  type PublicClient,
  parseAbiItem,
} from "viem";
import { jsonRpcTransport } from "./json-rpc-transport.ts";

const AUTHORIZATION_USED = parseAbiItem(
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
);

/** Bounded, so a flood of fresh payer addresses cannot grow it without limit. */
const CODE_CACHE_MAX = 10_000;
const CODE_CACHE_TTL_MS = 10 * 60_000;

export interface SettlementChain {
  /** True when `address` holds code (a contract or a delegated account). */
  hasCode(address: Address): Promise<boolean>;
  /**
   * The transaction that used the authorization `nonce` of `authorizer` on `token`, searched in the
   * last `lookbackBlocks` blocks; undefined when none did (not yet, or it was canceled instead).
   */
  authorizationUse(
    token: Address,
    authorizer: Address,
    nonce: Hex,
  ): Promise<{ transaction: Hex } | undefined>;
  close(): Promise<void>;
}

export function createSettlementChain(opts: {
  rpcUrl: string;
  chainId: number;
  timeoutMs: number;
  lookbackBlocks: number;
}): SettlementChain {
  const rpc = jsonRpcTransport(opts.rpcUrl, { timeoutMs: opts.timeoutMs, connections: 2 });
  const client: PublicClient = createPublicClient({
    chain: defineChain({
      id: opts.chainId,
      name: `x402 settlement ${opts.chainId}`,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [opts.rpcUrl] } },
    }),
    transport: rpc.transport,
  });
  const code = new Map<string, { has: boolean; until: number }>();
  return {
    async hasCode(address) {
      const key = address.toLowerCase();
      const now = Date.now();
      const cached = code.get(key);
      if (cached && cached.until > now) return cached.has;
      const bytecode = await client.getCode({ address });
      const has = bytecode !== undefined && bytecode !== "0x";
      if (code.size >= CODE_CACHE_MAX) code.delete(code.keys().next().value ?? "");
      code.set(key, { has, until: now + CODE_CACHE_TTL_MS });
      return has;
    },
    async authorizationUse(token, authorizer, nonce) {
      const head = await client.getBlockNumber();
      const from = head > BigInt(opts.lookbackBlocks) ? head - BigInt(opts.lookbackBlocks) : 0n;
      const logs = await client.getLogs({
        address: token,
        event: AUTHORIZATION_USED,
        args: { authorizer, nonce },
        fromBlock: from,
        toBlock: head,
      });
      const hit = logs.find((l) => l.transactionHash);
      return hit?.transactionHash ? { transaction: hit.transactionHash } : undefined;
    },
    close: () => rpc.close(),
  };
}
