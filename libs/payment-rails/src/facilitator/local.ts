// The x402 facilitator in-process: x402Facilitator with the EVM schemes (`exact`, batch-settlement)
// and our own settlement key, its transactions serialised through the signer lock
// (libs/settlement-signer). Chain outages surface as FacilitatorUnavailableError (call-scope.ts).
import { SerialSubmitter } from "@tollgate/settlement-signer";
import { x402Facilitator } from "@x402/core/facilitator";
import type { FacilitatorClient } from "@x402/core/server";
import type {
  PaymentPayload,
  PaymentRequirements,
  SettleResponse,
  SupportedResponse,
  VerifyResponse,
} from "@x402/core/types";
import { eip3009ABI, toFacilitatorEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme as BatchSettlementFacilitatorScheme } from "@x402/evm/batch-settlement/facilitator";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import {
  type Abi,
  BaseError,
  createPublicClient,
  createWalletClient,
  defineChain,
  ExecutionRevertedError,
  type Hex,
  hexToBytes,
  type TransactionReceipt,
  type TransactionSerializable,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type Caip2, chainIdOf, type FacilitatorConfig } from "../config.ts";
import { jsonRpcTransport } from "../json-rpc-transport.ts";
import { signTransaction } from "../secp256k1.ts";
import {
  balanceRead,
  currentScope,
  drawingPayer,
  errorText,
  isTransportError,
  outageAware,
  readKey,
  swallowTransportError,
  takeCompanions,
  tracked,
} from "./call-scope.ts";
import {
  type Eip3009Transfer,
  eip3009Transfer,
  transferData,
  transferErrorReason,
} from "./eip3009-transfer.ts";
import {
  FEES_REUSE_MS,
  feeReader,
  PREPARED_FEES_TTL_MS,
  type PreparedFees,
  preparedFeesStore,
} from "./prepared-fees.ts";
import { settleVerifiedTransfer } from "./settle-verified.ts";
import type { Facilitator, FacilitatorDeps } from "./types.ts";

type LocalConfig = Extract<FacilitatorConfig, { mode: "local" }>;

/** A node refusal that means the nonce is taken (the submitter retries those with a fresh one). */
const NONCE_REFUSED =
  /nonce too low|nonce has already been used|replacement transaction underpriced|already known/i;

/**
 * When the receipt is read right after the send (ms after the previous read), before the library's
 * wait, which polls every X402_RECEIPT_POLL_MS: a chain that mines at once (a local one, or a
 * preconfirming sequencer) may answer the send a moment before its receipt is there, and a 250 ms
 * poll for it would cost more than the whole settlement.
 */
const RECEIPT_SOON_MS = [0, 1, 3, 10];

/** How long an address read without code counts as a plain account (see plainAccounts), and how many. */
const PLAIN_ACCOUNT_TTL_MS = 60_000;
const PLAIN_ACCOUNTS_MAX = 10_000;

export function createLocalFacilitator(cfg: LocalConfig, network: Caip2, deps: FacilitatorDeps): Facilitator {
  const { logger, pendingSettlementStore } = deps;
  const chain = defineChain({
    id: chainIdOf(network),
    name: `x402 settlement ${network}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [cfg.rpcUrl] } },
  });
  // No retries (see jsonRpcTransport): outages are reported as such instead (see call-scope.ts).
  const rpc = jsonRpcTransport(cfg.rpcUrl, { timeoutMs: cfg.rpcTimeoutMs, companions: takeCompanions });
  const transport = rpc.transport;
  const publicClient = createPublicClient({ chain, transport, pollingInterval: cfg.pollingIntervalMs });
  const account = privateKeyToAccount(cfg.privateKey);
  const privateKey = hexToBytes(cfg.privateKey);
  const wallet: WalletClient = createWalletClient({ account, chain, transport });
  const submitter = new SerialSubmitter(publicClient, account.address, deps.signerLock);

  /**
   * Addresses read without code (plain accounts), until when. The library reads the payer's code on
   * every verify, to check the signature by ECDSA or by ERC-1271; for a plain ECDSA authorization
   * (readAhead) the signer was already recovered as the payer, and the simulation runs the token's
   * own check against the chain as it is now, so a code read older than this decides nothing.
   */
  const plainAccounts = new Map<string, number>();

  function getCode(address: `0x${string}`): Promise<Hex | undefined> {
    const memo = currentScope()?.code;
    const key = address.toLowerCase();
    const cached = memo?.get(key);
    if (cached) return cached;
    const read = tracked(() => publicClient.getCode({ address })).catch(swallowTransportError);
    read.then((code) => {
      if (code !== "0x" && code !== undefined) return;
      if (plainAccounts.size >= PLAIN_ACCOUNTS_MAX)
        plainAccounts.delete(plainAccounts.keys().next().value ?? "");
      plainAccounts.set(key, Date.now() + PLAIN_ACCOUNT_TTL_MS);
    }, swallowTransportError);
    memo?.set(key, read);
    return read;
  }

  const preparedFees = preparedFeesStore();
  const prepareFees = feeReader({ wallet, account, chain });

  /**
   * The library's verify of a plain ECDSA EIP-3009 payment reads the payer's code, recovers the
   * signer (CPU), then simulates the transfer. Both are started here, before the recovery, so the
   * node answers while the signature is checked; its calls find them in the scope (a call with
   * other arguments reads for itself). The simulation is the settlement transaction's own fill
   * (gas and fees, from the settlement account, no nonce: one eth_fillTransaction where the node
   * has it): a transfer the token would refuse fails its gas estimate. The fields are kept for
   * Settle (PreparedFees). Only a fill that failed is followed by the library's eth_call, whose
   * refusal (or outage) is then the answer. A payer known to have no code is not read again.
   */
  function readAhead(payload: PaymentPayload, requirements: PaymentRequirements): void {
    const transfer = eip3009Transfer(payload, requirements);
    const scope = currentScope();
    if (!transfer || !scope) return;
    const from = transfer.from.toLowerCase();
    if ((plainAccounts.get(from) ?? 0) > Date.now()) scope.code.set(from, Promise.resolve(undefined));
    else getCode(transfer.from).catch(() => undefined); // the library awaits it, or refused before it did
    const simulate = () =>
      tracked(() =>
        publicClient.readContract({
          address: transfer.asset,
          abi: eip3009ABI as Abi, // a state-changing function, simulated
          functionName: "transferWithAuthorization",
          args: transfer.args,
        }),
      );
    const data = transferData(transfer);
    const recent = lastFees;
    const read = (
      recent && Date.now() - recent.at < FEES_REUSE_MS
        ? tracked(() => publicClient.call({ account, to: transfer.asset, data, gas: recent.gas })).then(
            () => recent,
          )
        : tracked(() => prepareFees(transfer.asset, data)).then((fees) => {
            lastFees = fees;
            return fees;
          })
    ).then((fees) => {
      preparedFees.keep(transfer.signature, { ...fees, data });
      return undefined; // what the simulation answers: transferWithAuthorization returns nothing
    }, simulate);
    read.catch(() => undefined); // awaited by the library, or by no one when it refused earlier
    scope.reads.set(readKey(transfer.asset, "transferWithAuthorization", transfer.args), read);
  }

  const signer = toFacilitatorEvmSigner(
    {
      address: account.address,
      readContract: (args) => {
        const ahead = currentScope()?.reads.get(readKey(args.address, args.functionName, args.args));
        return (
          ahead ??
          tracked(() => publicClient.readContract({ ...args, abi: args.abi as Abi, args: args.args ?? [] }))
        );
      },
      verifyTypedData: (args) => tracked(() => publicClient.verifyTypedData(args as never)),
      // A failed getCode must not throw: the exact scheme starts an asset check with it that it
      // may never await (an unhandled rejection). The outage is noted and reported instead.
      getCode: (args) => getCode(args.address),
      waitForTransactionReceipt: (args) =>
        tracked(() => publicClient.waitForTransactionReceipt(args)).then((receipt) => {
          noteReceipt(receipt);
          return receipt;
        }),
      writeContract: (args) =>
        tracked(() =>
          submitter.submit((nonce) =>
            wallet.writeContract({
              address: args.address,
              abi: args.abi as Abi,
              functionName: args.functionName,
              args: args.args,
              ...(args.gas !== undefined && { gas: args.gas }),
              ...(args.dataSuffix !== undefined && { dataSuffix: args.dataSuffix }),
              account,
              chain,
              nonce,
            }),
          ),
        ),
      sendTransaction: (args) =>
        tracked(() =>
          submitter.submit((nonce) =>
            wallet.sendTransaction({ to: args.to, data: args.data, account, chain, nonce }),
          ),
        ),
    },
    { confirmationTimeoutMs: cfg.confirmationTimeoutMs },
  );

  // Every x402 scheme this service offers settles through the one key. batch-settlement gets no
  // authorizer: payment-verifier signs claims and refunds with its own receiver-authorizer key.
  const facilitator = new x402Facilitator()
    .register(network, new ExactEvmScheme(signer, pendingSettlementStore ? { pendingSettlementStore } : {}))
    .register(network, new BatchSettlementFacilitatorScheme(signer));

  /**
   * A reverted settlement of ours (mined: its gas is paid, nothing collected) is counted under the
   * scope's scheme with what it cost, however the library or this module sent it.
   */
  function noteReceipt(receipt: TransactionReceipt): void {
    if (receipt.status !== "reverted") return;
    const scheme = currentScope()?.scheme ?? "unknown";
    deps.onReverted?.(scheme, receipt.gasUsed * (receipt.effectiveGasPrice ?? 0n));
  }

  const client: FacilitatorClient = {
    verify: (payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> =>
      outageAware(
        "verify",
        requirements.scheme,
        async (scope) => {
          // The payer's balance rides with the verification's first read (no round trip of its own).
          const balance = balanceRead(scope, drawingPayer(payload, requirements), requirements.asset);
          readAhead(payload, requirements);
          const verified = await facilitator.verify(payload, requirements);
          // A companion that found no call to ride with reads nothing: the balance is then unknown.
          for (const c of scope.companions.splice(0)) c.resolve(undefined);
          const payerBalance = verified.isValid ? await balance : undefined;
          return payerBalance === undefined
            ? verified
            : { ...verified, extra: { ...verified.extra, payerBalance: payerBalance.toString() } };
        },
        (r) => !r.isValid,
      ),
    settle: (payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> =>
      outageAware(
        "settle",
        requirements.scheme,
        () => facilitator.settle(payload, requirements),
        // A broadcast transaction (settlement_pending) is reported as is: money may still move.
        (r) => !r.success && !r.transaction,
      ),
    // The facilitator lists the networks it was registered with, all CAIP-2.
    getSupported: async () => facilitator.getSupported() as SupportedResponse,
  };

  /**
   * The last fields a fill read, shared by the payments verified within FEES_REUSE_MS of it: fees
   * are the chain's, not a payment's, and the gas limit (with its headroom) is checked for each
   * payment by simulating its transfer from the settlement account under that limit (one eth_call;
   * a fill estimates, several executions). A simulation that fails under it goes to the library's.
   */
  let lastFees: PreparedFees | undefined;

  /**
   * Sends the transfer with the next nonce, under the signer lock: signed with the fields read at
   * Verify while they are still fresh then (no estimate under the lock), else prepared the ordinary way. A
   * prepared send the node refuses (a fee below the base fee, too little gas) is prepared again once,
   * with the same nonce, before the lock is let go. `abort` is awaited before anything is sent: a
   * reason there stops the send and frees the lock.
   */
  function submitTransfer(
    transfer: Eip3009Transfer,
    prepared: PreparedFees | undefined,
    abort: Promise<Error | undefined>,
  ): Promise<Hex> {
    const data = prepared?.data ?? transferData(transfer);
    const filled = (nonce: number) =>
      wallet.sendTransaction({ to: transfer.asset, data, account, chain, nonce });
    return tracked(() =>
      submitter.submit(async (nonce) => {
        const stop = await abort;
        if (stop) throw stop;
        // Fresh when the lock is taken, not only when Settle began: sends queue behind each other.
        if (!prepared || Date.now() - prepared.at >= PREPARED_FEES_TTL_MS) return filled(nonce);
        const { at: _, data: __, ...fields } = prepared;
        const signed = signTransaction(
          {
            ...fields,
            ...(fields.gasPrice === undefined ? { type: "eip1559" } : { type: "legacy" }),
            chainId: chain.id,
            to: transfer.asset,
            data,
            nonce,
          } as TransactionSerializable,
          privateKey,
        );
        // Not eth_sendRawTransactionSync (one round trip for the send and the receipt): the signer
        // lock is held until the send answers, and a Sync send answers once the transaction is
        // included, so every replica's settlements would queue a block apart behind it, and a
        // replica killed while it waits leaves the lock held for its whole hold (chaos run).
        return publicClient.sendRawTransaction({ serializedTransaction: signed }).catch((err: unknown) => {
          // Refused by the node (it answered): not in its pool, so the nonce is still free. A nonce
          // conflict is the submitter's to retry; anything else (fees, gas) is prepared again.
          if (isTransportError(err) || NONCE_REFUSED.test(errorText(err))) throw err;
          return filled(nonce);
        });
      }),
    );
  }

  async function receiptSoon(hash: Hex): Promise<TransactionReceipt | undefined> {
    for (const wait of RECEIPT_SOON_MS) {
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const receipt = await publicClient.getTransactionReceipt({ hash }).catch(() => undefined);
      if (receipt) return receipt;
    }
    return undefined;
  }

  /**
   * The transfer simulated from the settlement account just before it is sent (started beside the
   * signer lock's round trip): the token's refusal code when it would revert now (the authorization
   * canceled or used since Verify, the balance spent), else undefined.
   */
  const refusalNow = (transfer: Eip3009Transfer): Promise<string | undefined> =>
    tracked(() => publicClient.call({ account, to: transfer.asset, data: transferData(transfer) })).then(
      () => undefined,
      (err: unknown) => {
        if (isTransportError(err)) throw err;
        // Only the token's own refusal withholds the transfer: a node's other error (throttled, a
        // state it pruned) says nothing of it, and the transfer is sent as it was before.
        const reverted =
          err instanceof BaseError && err.walk((e) => e instanceof ExecutionRevertedError) !== null;
        const reason = transferErrorReason(err);
        return reverted || reason !== "invalid_exact_evm_transaction_failed" ? reason : undefined;
      },
    );

  const settleVerified = (
    payload: PaymentPayload,
    requirements: PaymentRequirements,
  ): Promise<SettleResponse> =>
    outageAware(
      "settle",
      requirements.scheme,
      () =>
        settleVerifiedTransfer(
          {
            signer,
            pending: pendingSettlementStore,
            submit: submitTransfer,
            receiptSoon,
            takePrepared: preparedFees.take,
            refusalNow,
            noteReceipt,
            withheld: (reason) => deps.onWithheld?.(requirements.scheme, reason),
          },
          payload,
          requirements,
          () => client.settle(payload, requirements),
        ),
      (r) => !r.success && !r.transaction,
    );

  logger.debug({ address: account.address, network }, "in-process x402 facilitator");
  return {
    mode: "local",
    client,
    address: account.address,
    settleVerified,
    close: () => rpc.close(),
  };
}
