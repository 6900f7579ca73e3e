// Gas and fees of an `exact` settlement read while its payment is verified, kept for its Settle in
// this process so the send under the signer lock needs no estimate of its own.
import type { Account, Address, Chain, Hex, WalletClient } from "viem";

/**
 * How long a fill's fields serve later payments' simulations. Half the time they are used for at
 * Settle (PREPARED_FEES_TTL_MS), so a payment verified with them still finds them fresh there.
 */
export const FEES_REUSE_MS = 1_000;
/** Prepared fields kept at most, waiting for their Settle. */
const PREPARED_FEES_MAX = 10_000;

/** Unused gas is not paid for: the limit read at Verify gets this much headroom for a state that moved. */
const GAS_HEADROOM_PERCENT = 20n;
/**
 * How long fees read at Verify are used for the settlement. A base fee rises at most 12.5% a block,
 * and the node's fill (or viem's estimate) leaves room for at least one block: within a couple of
 * seconds the transaction is sure to be priced into the next block. Older, Settle reads them again.
 */
export const PREPARED_FEES_TTL_MS = 2_000;

/** The gas and fee fields of a settlement transaction, read at Verify; every field but the nonce. */
export interface PreparedFees {
  /** When they were read (ms since the epoch). */
  at: number;
  gas: bigint;
  /** The transfer's calldata they were read for (kept with a payment's fields, encoded once). */
  data?: Hex;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
  gasPrice?: bigint;
}

/**
 * Gas and fees read at Verify, by the authorization's signature, taken by its Settle in this
 * process (a Settle on another replica reads them under the lock). Oldest first: expired ones go
 * from the front.
 */
export function preparedFeesStore() {
  const preparedFees = new Map<string, PreparedFees>();
  return {
    keep(signature: Hex, fees: PreparedFees): void {
      const now = Date.now();
      for (const [key, old] of preparedFees) {
        if (now - old.at < PREPARED_FEES_TTL_MS && preparedFees.size < PREPARED_FEES_MAX) break;
        preparedFees.delete(key);
      }
      preparedFees.set(signature.toLowerCase(), fees);
    },
    take(signature: Hex): PreparedFees | undefined {
      const key = signature.toLowerCase();
      const fees = preparedFees.get(key);
      preparedFees.delete(key);
      return fees;
    },
  };
}

/**
 * Reads gas and fees for the transfer the way viem prepares a transaction (one eth_fillTransaction
 * where the node has it, else the fee history and an estimate), without a nonce: the nonce is
 * only ever taken under the signer lock. Rejects when the estimate does (the transfer reverts).
 */
export function feeReader({
  wallet,
  account,
  chain,
}: {
  wallet: WalletClient;
  account: Account;
  chain: Chain;
}) {
  return async function prepareFees(to: Address, data: Hex): Promise<PreparedFees> {
    const at = Date.now();
    const request = await wallet.prepareTransactionRequest({
      account,
      chain,
      to,
      data,
      parameters: ["fees", "gas", "type"],
    });
    return {
      at,
      gas: (request.gas * (100n + GAS_HEADROOM_PERCENT)) / 100n,
      ...(request.type === "legacy" || request.type === "eip2930"
        ? { gasPrice: request.gasPrice ?? 0n }
        : {
            maxFeePerGas: request.maxFeePerGas ?? 0n,
            maxPriorityFeePerGas: request.maxPriorityFeePerGas ?? 0n,
          }),
    };
  };
}
