// The x402 facilitator behind the resource server, in one of two modes:
//   remote: a facilitator service (standard /verify, /settle, /supported) via HTTPFacilitatorClient;
//   local:  x402Facilitator in-process with the exact EVM scheme and our own settlement key.
// Either way the resource server sees a FacilitatorClient. A facilitator or chain that cannot be
// reached surfaces as FacilitatorUnavailableError, never as an invalid payment.
import { AsyncLocalStorage } from "node:async_hooks";
import type { Logger } from "@tollgate/platform";
import { SerialSubmitter, type SignerLock } from "@tollgate/settlement-signer";
import { type PendingSettlementStore, x402Facilitator } from "@x402/core/facilitator";
import { type FacilitatorClient, HTTPFacilitatorClient } from "@x402/core/server";
import type {
  PaymentPayload,
  PaymentRequirements,
  SettleResponse,
  SupportedResponse,
  VerifyResponse,
} from "@x402/core/types";
import { type ExactEIP3009Payload, eip3009ABI, isEIP3009Payload, toFacilitatorEvmSigner } from "@x402/evm";
import { BatchSettlementEvmScheme as BatchSettlementFacilitatorScheme } from "@x402/evm/batch-settlement/facilitator";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import {
  type Abi,
  type Address,
  BaseError,
  createPublicClient,
  createWalletClient,
  defineChain,
  ExecutionRevertedError,
  encodeFunctionData,
  getAddress,
  type Hex,
  hexToBytes,
  parseSignature,
  type TransactionReceipt,
  type TransactionSerializable,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type Caip2, chainIdOf, type FacilitatorConfig } from "../config.ts";
import { FacilitatorUnavailableError } from "../core/types.ts";
import { type Companion, jsonRpcTransport } from "./json-rpc-transport.ts";
import { signTransaction } from "./secp256k1.ts";

export interface Facilitator {
  readonly mode: "remote" | "local";
  readonly client: FacilitatorClient;
  /** The settlement account (local mode). */
  readonly address?: `0x${string}`;
  /**
   * Local mode: settles an `exact` EIP-3009 payment that Verify accepted, with the same payload and
   * requirements, without verifying it a second time (see settleVerifiedTransfer), with the gas and
   * fees this process read while verifying it, if they are still fresh (see PreparedFees).
   */
  readonly settleVerified?: (
    payload: PaymentPayload,
    requirements: PaymentRequirements,
  ) => Promise<SettleResponse>;
  close(): Promise<void>;
}

export interface FacilitatorDeps {
  logger: Logger;
  /** A settlement transaction of ours was mined and reverted: its scheme and the fee it cost (wei). */
  onReverted?: (scheme: string, feeWei: bigint) => void;
  /** A settlement was not sent: the check just before sending found it failing (the refusal code). */
  onWithheld?: (scheme: string, reason: string) => void;
  /** Shares broadcast-but-unconfirmed settlements across replicas (Redis). */
  pendingSettlementStore?: PendingSettlementStore;
  /** Serialises the settlement key's transactions across every replica that holds it. */
  signerLock: SignerLock;
}

export function createFacilitator(
  cfg: FacilitatorConfig,
  network: Caip2,
  deps: FacilitatorDeps,
): Facilitator {
  if (cfg.mode === "remote") {
    return {
      mode: "remote",
      client: new HTTPFacilitatorClient({ url: cfg.url, timeoutMs: cfg.timeoutMs }),
      close: async () => {},
    };
  }
  return createLocalFacilitator(cfg, network, deps);
}

// ---- local mode ----

/** balanceOf(address) */
const BALANCE_OF = "0x70a08231";

/**
 * Whose balance a payment's settlement draws on with a transaction of ours: an `exact` EIP-3009
 * transfer's `from`, an x402-batch deposit's payer; undefined for anything that sends nothing of
 * the payer's (a voucher).
 */
function drawingPayer(payload: PaymentPayload, requirements: PaymentRequirements): Address | undefined {
  const inner = payload.payload as {
    authorization?: { from?: unknown };
    type?: unknown;
    channelConfig?: { payer?: unknown };
  };
  const payer =
    requirements.scheme === "exact"
      ? inner.authorization?.from
      : inner.type === "deposit"
        ? inner.channelConfig?.payer
        : undefined;
  return typeof payer === "string" && /^0x[0-9a-fA-F]{40}$/.test(payer) ? (payer as Address) : undefined;
}

/**
 * The payer's token balance, read as a companion of the scope's next call (one round trip for
 * both); undefined when there is no payer, or the read failed (the balance is then unknown).
 */
function balanceRead(
  scope: CallScope,
  payer: Address | undefined,
  asset: string,
): Promise<bigint | undefined> {
  if (!payer) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    scope.companions.push({
      method: "eth_call",
      params: [
        { to: asset, data: `${BALANCE_OF}${payer.slice(2).toLowerCase().padStart(64, "0")}` },
        "latest",
      ],
      resolve: (result) => {
        try {
          resolve(typeof result === "string" && result.length > 2 ? BigInt(result.slice(0, 66)) : undefined);
        } catch {
          resolve(undefined);
        }
      },
      reject: () => resolve(undefined),
    });
  });
}

type LocalConfig = Extract<FacilitatorConfig, { mode: "local" }>;

/** viem errors that mean "could not talk to the node", as opposed to the node answering. */
const TRANSPORT_ERRORS = new Set([
  "HttpRequestError",
  "TimeoutError",
  "WebSocketRequestError",
  "SocketClosedError",
]);

function isTransportError(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 8; depth++) {
    const { name, cause } = e as { name?: string; cause?: unknown };
    if (name && TRANSPORT_ERRORS.has(name)) return true;
    e = cause;
  }
  return false;
}

/**
 * Notes RPC transport failures during one verify/settle. The exact scheme turns some of them into
 * ordinary refusals (a failed getCode reads as "invalid signature", a failed simulation as
 * "simulation failed"); with this we can tell an outage from a bad payment.
 */
const rpcFailures = new AsyncLocalStorage<CallScope>();

/**
 * Runs one verify or settle in its own scope: a transport failure, or a refusal the library made
 * while the node was unreachable (`refusedByOutage`), is a FacilitatorUnavailableError (503, retry),
 * never a payment refused for a reason it does not have.
 */
async function outageAware<R>(
  step: "verify" | "settle",
  scheme: string,
  run: (scope: CallScope) => Promise<R>,
  refusedByOutage: (result: R) => boolean,
): Promise<R> {
  const scope = newScope(scheme);
  const unavailable = () => new FacilitatorUnavailableError(`settlement chain unreachable during ${step}`);
  const result = await rpcFailures
    .run(scope, () => run(scope))
    .catch((err) => {
      throw scope.failed || isTransportError(err) ? unavailable() : err;
    });
  if (scope.failed && refusedByOutage(result)) throw unavailable();
  return result;
}

/** One facilitator verify or settle: whether the node was unreachable, and reads made so far. */
interface CallScope {
  /** The x402 scheme of the payment (exact, batch-settlement): what its reverts are counted under. */
  scheme: string;
  failed: boolean;
  /** Reads to send with the scope's next call, in the same round trip (see jsonRpcTransport). */
  companions: Companion[];
  /** The exact scheme reads the payer's code twice per verify; once is enough. */
  code: Map<string, Promise<Hex | undefined>>;
  /** Contract reads started ahead of the library (readAhead), by call (see readKey). */
  reads: Map<string, Promise<unknown>>;
}

const newScope = (scheme: string): CallScope => ({
  scheme,
  failed: false,
  companions: [],
  code: new Map(),
  reads: new Map(),
});

/** The reads waiting to ride with the current scope's next call (taken once). */
function takeCompanions(): Companion[] | undefined {
  const scope = rpcFailures.getStore();
  if (!scope || scope.companions.length === 0) return undefined;
  const taken = scope.companions;
  scope.companions = [];
  return taken;
}

/** A contract read's identity: the contract, the function and its arguments. */
function readKey(address: string, functionName: string, args: readonly unknown[] | undefined): string {
  return `${address}|${functionName}|${(args ?? []).map(String).join("|")}`.toLowerCase();
}

async function tracked<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (isTransportError(err)) {
      const scope = rpcFailures.getStore();
      if (scope) scope.failed = true;
    }
    throw err;
  }
}

function swallowTransportError(err: unknown): undefined {
  if (isTransportError(err)) return undefined;
  throw err;
}

function createLocalFacilitator(cfg: LocalConfig, network: Caip2, deps: FacilitatorDeps): Facilitator {
  const { logger, pendingSettlementStore } = deps;
  const chain = defineChain({
    id: chainIdOf(network),
    name: `x402 settlement ${network}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [cfg.rpcUrl] } },
  });
  // No retries (see jsonRpcTransport): outages are reported as such instead (see rpcFailures).
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
    const memo = rpcFailures.getStore()?.code;
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

  /**
   * Gas and fees read at Verify, by the authorization's signature, taken by its Settle in this
   * process (a Settle on another replica reads them under the lock). Oldest first: expired ones go
   * from the front.
   */
  const preparedFees = new Map<string, PreparedFees>();

  function keepPrepared(signature: Hex, fees: PreparedFees): void {
    const now = Date.now();
    for (const [key, old] of preparedFees) {
      if (now - old.at < PREPARED_FEES_TTL_MS && preparedFees.size < PREPARED_FEES_MAX) break;
      preparedFees.delete(key);
    }
    preparedFees.set(signature.toLowerCase(), fees);
  }

  function takePrepared(signature: Hex): PreparedFees | undefined {
    const key = signature.toLowerCase();
    const fees = preparedFees.get(key);
    preparedFees.delete(key);
    return fees;
  }

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
    const scope = rpcFailures.getStore();
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
      keepPrepared(transfer.signature, { ...fees, data });
      return undefined; // what the simulation answers: transferWithAuthorization returns nothing
    }, simulate);
    read.catch(() => undefined); // awaited by the library, or by no one when it refused earlier
    scope.reads.set(readKey(transfer.asset, "transferWithAuthorization", transfer.args), read);
  }

  const signer = toFacilitatorEvmSigner(
    {
      address: account.address,
      readContract: (args) => {
        const ahead = rpcFailures.getStore()?.reads.get(readKey(args.address, args.functionName, args.args));
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
    const scheme = rpcFailures.getStore()?.scheme ?? "unknown";
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
   * Reads gas and fees for the transfer the way viem prepares a transaction (one eth_fillTransaction
   * where the node has it, else the fee history and an estimate), without a nonce: the nonce is
   * only ever taken under the signer lock. Rejects when the estimate does (the transfer reverts).
   */
  async function prepareFees(to: Address, data: Hex): Promise<PreparedFees> {
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
  }

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
            takePrepared,
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

// ---- the exact scheme's transfer, settled without a second verification ----

/** A node refusal that means the nonce is taken (the submitter retries those with a fresh one). */
const NONCE_REFUSED =
  /nonce too low|nonce has already been used|replacement transaction underpriced|already known/i;

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

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
/**
 * How long a fill's fields serve later payments' simulations. Half the time they are used for at
 * Settle (PREPARED_FEES_TTL_MS), so a payment verified with them still finds them fresh there.
 */
const FEES_REUSE_MS = 1_000;
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

/** A plain (65-byte ECDSA) EIP-3009 authorization of the exact scheme, as transferWithAuthorization takes it. */
interface Eip3009Transfer {
  asset: Address;
  from: Address;
  auth: ExactEIP3009Payload["authorization"];
  signature: Hex;
  /** from, to, value, validAfter, validBefore, nonce, v, r, s. */
  args: readonly [Address, Address, bigint, bigint, bigint, Hex, number, Hex, Hex];
}

function eip3009Transfer(
  payload: PaymentPayload,
  requirements: PaymentRequirements,
): Eip3009Transfer | undefined {
  const inner = payload.payload;
  if (requirements.scheme !== "exact" || !isEIP3009Payload(inner as never)) return undefined;
  const { authorization: auth, signature } = inner as unknown as ExactEIP3009Payload;
  if (signature?.length !== 132) return undefined;
  try {
    const { r, s, v, yParity } = parseSignature(signature as Hex);
    const from = getAddress(auth.from);
    return {
      asset: getAddress(requirements.asset),
      from,
      auth,
      signature: signature as Hex,
      args: [
        from,
        getAddress(auth.to),
        BigInt(auth.value),
        BigInt(auth.validAfter),
        BigInt(auth.validBefore),
        auth.nonce as Hex,
        Number(v ?? yParity),
        r,
        s,
      ],
    };
  } catch {
    return undefined; // not an authorization the contract could take: the library's verdict stands
  }
}

const transferData = (t: Eip3009Transfer): Hex =>
  encodeFunctionData({ abi: eip3009ABI, functionName: "transferWithAuthorization", args: t.args });

/** What transferWithAuthorization reverts with, as the exact scheme's refusal codes. */
function transferErrorReason(err: unknown): string {
  const msg = errorText(err);
  if (/authorization.*(expired|valid before)|AuthorizationExpired/i.test(msg))
    return "invalid_exact_evm_payload_authorization_valid_before";
  if (/authorization.*not.*valid|AuthorizationNotYetValid/i.test(msg))
    return "invalid_exact_evm_payload_authorization_valid_after";
  if (/authorization.*used|AuthorizationAlreadyUsed|AuthorizationUsedOrCanceled/i.test(msg))
    return "invalid_exact_evm_nonce_already_used";
  if (/exceeds.*balance|insufficient.*balance|ERC20InsufficientBalance/i.test(msg))
    return "invalid_exact_evm_insufficient_balance";
  if (/invalid.*signature|SignerMismatch|InvalidSignatureV|InvalidSignatureS/i.test(msg))
    return "invalid_exact_evm_signature";
  return "invalid_exact_evm_transaction_failed";
}

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
 * requirements (the core proves it from the reservation), without the library's second verification
 * in settle (another getCode and another secp256k1 recovery, pure JS, about 2 ms of CPU a call).
 * Only time can change in between, so it is checked again here. Nothing is given away by skipping
 * the rest: a call is answered only after its settlement succeeded (a transfer the token refuses
 * now is refused by gas estimation when it is prepared here, or reverts on chain when it was
 * prepared at Verify; either way nothing moved and the call is not served). The pending-settlement
 * bookkeeping and the Transfer-event check are the library's. Anything but a plain ECDSA
 * authorization (a smart wallet, ERC-6492), or a payment with a broadcast settlement still pending,
 * goes through the library.
 */
async function settleVerifiedTransfer(
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
