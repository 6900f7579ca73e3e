// One settlement key, many concurrent transactions: submissions go out one at a time with nonces we
// count ourselves, so concurrent sends never race for a nonce. Within a process a queue orders them;
// across processes holding the same key (payment-verifier replicas, the settlement worker), the
// signer lock (Redis) does, and it keeps the next nonce. A nonce is consumed only when the node
// accepted the transaction; after a failure the next submission re-reads the pending count from the
// node, and a nonce conflict is retried once with it. Receipt waits happen outside the queue and the
// lock.
import type { Hex } from "viem";
import type { SignerLock } from "./signer-lock.ts";

/** The node refused a nonce another submission already used (a replica, or a crashed run). */
const NONCE_CONFLICT =
  /nonce too low|nonce has already been used|replacement transaction underpriced|already known/i;

/** What the submitter reads of the chain (a viem PublicClient has it). */
export interface NonceSource {
  getChainId(): Promise<number>;
  getBlock(args: { blockNumber: bigint }): Promise<{ hash: Hex | null }>;
  getTransactionCount(args: { address: `0x${string}`; blockTag: "pending" }): Promise<number>;
}

export class SerialSubmitter {
  readonly #chain: NonceSource;
  readonly #address: `0x${string}`;
  readonly #lock: SignerLock;
  #tail: Promise<unknown> = Promise.resolve();
  #scope: string | undefined;

  constructor(chain: NonceSource, address: `0x${string}`, lock: SignerLock) {
    this.#chain = chain;
    this.#address = address;
    this.#lock = lock;
  }

  /** The key on this chain: address, chain id and genesis hash (read once); every holder names it alike. */
  async #signer(): Promise<string> {
    if (!this.#scope) {
      const [chainId, genesis] = await Promise.all([
        this.#chain.getChainId(),
        this.#chain.getBlock({ blockNumber: 0n }),
      ]);
      this.#scope = `${chainId}:${genesis.hash}:${this.#address}`;
    }
    return this.#scope;
  }

  submit(send: (nonce: number) => Promise<Hex>): Promise<Hex> {
    const pending = () => this.#chain.getTransactionCount({ address: this.#address, blockTag: "pending" });
    const attempt = async () => this.#lock.withNonce(await this.#signer(), pending, send);
    const run = () =>
      attempt().catch((err: unknown) => {
        if (!NONCE_CONFLICT.test(err instanceof Error ? err.message : String(err))) throw err;
        return attempt();
      });
    const result = this.#tail.then(run, run);
    this.#tail = result.catch(() => {});
    return result;
  }
}
