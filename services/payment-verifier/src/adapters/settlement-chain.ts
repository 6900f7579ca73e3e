// Reads of the x402 settlement chain that the exact scheme makes itself, outside the facilitator:
// whether an address holds code (a smart wallet's signature cannot be checked by recovery alone)
// whether an EIP-3009 authorization was used or canceled, and in which transaction, and a payer's
// token balance (when no in-process facilitator reads it with the payment's simulation); and a
// sign-in-with-x message's signature when recovery alone cannot check it (a smart wallet's).
import { jsonRpcTransport } from "@tollgate/payment-rails";
import {
  type Address,
  createPublicClient,
  defineChain,
  erc20Abi,
  type Hex,
  isErc6492Signature,
  numberToHex,
  type PublicClient,
  pad,
  toEventSelector,
  verifyMessage,
} from "viem";

const AUTHORIZATION_USED = toEventSelector("AuthorizationUsed(address,bytes32)");
const AUTHORIZATION_CANCELED = toEventSelector("AuthorizationCanceled(address,bytes32)");

/** Bounded, so a flood of fresh payer addresses cannot grow it without limit. */
const CODE_CACHE_MAX = 10_000;
const CODE_CACHE_TTL_MS = 10 * 60_000;

export interface SettlementChain {
  /** True when `address` holds code (a contract or a delegated account). */
  hasCode(address: Address): Promise<boolean>;
  /**
   * The transaction that used the authorization `nonce` of `authorizer` on `token`, searched in the
   * last `lookbackBlocks` blocks, with `canceled` when it was canceled instead of used; undefined
   * when neither is found (not yet).
   */
  authorizationUse(
    token: Address,
    authorizer: Address,
    nonce: Hex,
  ): Promise<{ transaction: Hex; canceled?: true } | undefined>;
  /** `owner`'s balance of `token`, atomic units. */
  balanceOf(token: Address, owner: Address): Promise<bigint>;
  /**
   * Whether `signature` is `address`'s over the EIP-191 `message`: recovered here for an account
   * with a key; read from the chain (EIP-1271, or EIP-6492 for a wallet not deployed yet) only when
   * the address holds code or the signature is an EIP-6492 wrapper. Throws when the chain cannot be
   * read.
   */
  verifyMessage(args: { address: Hex; message: string; signature: Hex }): Promise<boolean>;
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
  const chain: SettlementChain = {
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
      // Both events in one query: a use and a cancellation share their indexed arguments.
      const logs = await client.request({
        method: "eth_getLogs",
        params: [
          {
            address: token,
            topics: [[AUTHORIZATION_USED, AUTHORIZATION_CANCELED], pad(authorizer), nonce],
            fromBlock: numberToHex(from),
            toBlock: numberToHex(head),
          },
        ],
      });
      const hit = logs.find((l) => l.transactionHash);
      if (!hit?.transactionHash) return undefined;
      return hit.topics[0] === AUTHORIZATION_CANCELED
        ? { transaction: hit.transactionHash, canceled: true }
        : { transaction: hit.transactionHash };
    },
    balanceOf: (token, owner) =>
      client.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [owner] }),
    async verifyMessage({ address, message, signature }) {
      // Most wallets have a key: no chain read, so forged proofs cost a recovery, not an RPC call.
      if (await verifyMessage({ address, message, signature }).catch(() => false)) return true;
      // The code lookup is cached (a flood of forged proofs for one address reads it once).
      if (!isErc6492Signature(signature) && !(await chain.hasCode(address))) return false;
      return client.verifyMessage({ address, message, signature });
    },
    close: () => rpc.close(),
  };
  return chain;
}
