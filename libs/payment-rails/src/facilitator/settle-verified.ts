// Settling an `exact` payment Verify accepted, without the library's second verification: the
// transfer sent, its receipt read, and the token's Transfer log checked (see settleVerifiedTransfer).
import type { PendingSettlementStore } from "@x402/core/facilitator";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import { eip3009ABI, type toFacilitatorEvmSigner } from "@x402/evm";
import { type Abi, BaseError, type Hex, type TransactionReceipt } from "viem";
import { FacilitatorUnavailableError } from "../errors.ts";
import { errorText, isTransportError } from "./call-scope.ts";
import { type Eip3009Transfer, eip3009Transfer, transferErrorReason } from "./eip3009-transfer.ts";
import type { PreparedFees } from "./prepared-fees.ts";

/** keccak256("Transfer(address,address,uint256)"), an ERC-20 Transfer log's first topic. */
const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
/** An address as a log topic: a 32-byte word, lower case. */
const word = (address: string): string => `0x${address.slice(2).toLowerCase().padStart(64, "0")}`;

/** Seconds a settlement must still have before the authorization expires (the library's margin). */
const VALID_BEFORE_MARGIN_SECONDS = 6;

/** A broadcast settlement of this signature is still pending: the library awaits it. */
class PendingSettlement extends Error {}
/** The pending-settlement store could not be asked: nothing is sent. */
class PendingUnknown extends Error {}

interface TransferSettler {
  signer: ReturnType<typeof toFacilitatorEvmSigner>;
  pending: PendingSettlementStore | undefined;
  submit(
    transfer: Eip3009Transfer,
    prepared: PreparedFees | undefined,
    abort: Promise<Error | undefined>,
  ): Promise<Hex>;
  /** The gas and fees read while this payment was verified, in this process. */
  takePrepared(signature: Hex): PreparedFees | undefined;
  /** The receipt if it is there within a few ms of the send (see RECEIPT_SOON_MS). */
  receiptSoon(hash: Hex): Promise<TransactionReceipt | undefined>;
  /** Simulates the transfer now: the token's refusal code when it would revert, else undefined. */
  refusalNow(transfer: Eip3009Transfer): Promise<string | undefined>;
  /** Counts a receipt that reverted (see onReverted). */
  noteReceipt(receipt: TransactionReceipt): void;
  /** Told a transfer was not sent: it would revert now (see onWithheld). */
  withheld(reason: string): void;
}

/** A transfer that would revert now: not sent (see settleVerifiedTransfer). */
class Withheld extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(reason);
    this.reason = reason;
  }
}

/**
 * Settles an `exact` EIP-3009 payment that Verify accepted moments ago, with the same payload and
 * requirements (payment-verifier's core proves it from the reservation), without the library's second verification
 * in settle (another getCode and another secp256k1 recovery, pure JS, about 2 ms of CPU a call).
 * Only time can change in between, so it is checked again here. Nothing is given away by skipping
 * the rest: a call is answered only after its settlement succeeded (a transfer the token refuses
 * now is refused by gas estimation when it is prepared here, or reverts on chain when it was
 * prepared at Verify; either way nothing moved and the call is not served). The pending-settlement
 * bookkeeping and the Transfer-event check are the library's. Anything but a plain ECDSA
 * authorization (a smart wallet, ERC-6492), or a payment with a broadcast settlement still pending,
 * goes through the library.
 */
export async function settleVerifiedTransfer(
  deps: TransferSettler,
  payload: PaymentPayload,
  requirements: PaymentRequirements,
  viaLibrary: () => Promise<SettleResponse>,
): Promise<SettleResponse> {
  const transfer = eip3009Transfer(payload, requirements);
  if (!transfer) return viaLibrary();
  const { signer, pending } = deps;
  const { auth, signature, asset } = transfer;
  const network = requirements.network;
  const payer = auth.from;
  const refused = (errorReason: string, transaction = "", errorMessage?: string): SettleResponse => ({
    success: false,
    errorReason,
    ...(errorMessage ? { errorMessage } : {}),
    transaction,
    network,
    payer,
  });
  if (BigInt(auth.validBefore) < BigInt(Math.floor(Date.now() / 1000) + VALID_BEFORE_MARGIN_SECONDS)) {
    return refused("invalid_exact_evm_payload_authorization_valid_before");
  }
  // Asked while the signer lock is taken (one Redis round trip for both), awaited before sending;
  // it never rejects (nothing may await it before the lock is taken): a store failure is thrown there.
  const broadcast: Promise<Error | undefined> = pending
    ? pending.get(signature).then(
        (tx) => (tx ? new PendingSettlement() : undefined),
        (err: unknown) => new PendingUnknown(errorText(err), { cause: err }),
      )
    : Promise.resolve(undefined);
  // And the transfer simulated once more, beside the lock's round trip: Verify's simulation may be
  // stale (the payer canceled the authorization or spent the balance since), and a transfer sent
  // now would revert with our gas. (A broadcast one pending is the library's to await: first.)
  const now = deps.refusalNow(transfer).then(
    (reason) => (reason ? new Withheld(reason) : undefined),
    (err: unknown) => err as Error,
  );
  const abort = broadcast.then(async (stop) => stop ?? (await now));
  const prepared = deps.takePrepared(signature);
  let tx: Hex;
  try {
    tx = await deps.submit(transfer, prepared, abort);
  } catch (err) {
    if (err instanceof PendingSettlement) return viaLibrary();
    if (err instanceof PendingUnknown) throw err.cause; // as before: the store's error, not a refusal
    if (err instanceof Withheld) {
      deps.withheld(err.reason);
      return refused(err.reason);
    }
    if (isTransportError(err)) throw err;
    // Not the node refusing the transfer (viem's errors are): the settlement key's lock was busy in
    // another replica past its wait, or its Redis failed. Nothing was sent: a 503 to retry, never a
    // payment refused as "failed on chain" (chaos run: 402s at a Redis restart).
    if (!(err instanceof BaseError)) {
      throw err instanceof FacilitatorUnavailableError
        ? err
        : new FacilitatorUnavailableError(`settlement key unavailable: ${errorText(err)}`);
    }
    return refused(transferErrorReason(err), "", errorText(err));
  }
  let receipt: Awaited<ReturnType<typeof signer.waitForTransactionReceipt>>;
  try {
    const soon = await deps.receiptSoon(tx);
    if (soon) deps.noteReceipt(soon);
    receipt = soon ?? (await signer.waitForTransactionReceipt({ hash: tx }));
  } catch (err) {
    // Broadcast but not seen confirmed: a retry with the same payment awaits this transaction.
    const message = errorText(err);
    try {
      await pending?.set(signature, tx);
    } catch (storeError) {
      return refused(
        "invalid_exact_evm_transaction_failed",
        tx,
        `settlement_pending, but failed to persist for retry: ${(storeError as Error).message}`,
      );
    }
    return refused("settlement_pending", tx, message.slice(0, 400));
  }
  if (receipt.status !== "success") {
    // Sent without an estimate (fields read at Verify): the transfer is simulated again for the
    // reason the token refuses it now (spent balance, an authorization used since: an earlier
    // attempt of this settlement that landed, which the scheme then serves).
    const reason = await signer
      .readContract({
        address: asset,
        abi: eip3009ABI as Abi,
        functionName: "transferWithAuthorization",
        args: transfer.args,
      })
      .then(
        () => "invalid_exact_evm_transaction_failed",
        (err: unknown) => transferErrorReason(err),
      );
    return refused(reason, tx);
  }
  // The token's Transfer(from, to, value) log, compared as words (no ABI decoding, no checksums).
  const token = asset.toLowerCase();
  const from = word(auth.from);
  const to = word(auth.to);
  const value = BigInt(auth.value);
  const transferred = (receipt.logs ?? []).some(
    (log) =>
      log.address.toLowerCase() === token &&
      log.topics.length === 3 &&
      log.topics[0] === TRANSFER_TOPIC &&
      log.topics[1]?.toLowerCase() === from &&
      log.topics[2]?.toLowerCase() === to &&
      log.data.length === 66 &&
      BigInt(log.data) === value,
  );
  if (!transferred) return refused("invalid_exact_evm_transfer_event_mismatch", tx);
  return { success: true, transaction: tx, network, payer };
}
