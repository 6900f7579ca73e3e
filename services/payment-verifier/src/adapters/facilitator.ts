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
  createPublicClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  getAddress,
  type Hex,
  isAddressEqual,
  parseEventLogs,
  parseSignature,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type Caip2, chainIdOf, type FacilitatorConfig } from "../config.ts";
import { FacilitatorUnavailableError } from "../core/types.ts";
import { jsonRpcTransport } from "./json-rpc-transport.ts";

export interface Facilitator {
  readonly mode: "remote" | "local";
  readonly client: FacilitatorClient;
  /** The settlement account (local mode). */
  readonly address?: `0x${string}`;
  /**
   * Local mode: settles an `exact` EIP-3009 payment that Verify accepted, with the same payload and
   * requirements, without verifying it a second time (see settleVerifiedTransfer).
   */
  readonly settleVerified?: (
    payload: PaymentPayload,
    requirements: PaymentRequirements,
  ) => Promise<SettleResponse>;
  close(): Promise<void>;
}

export interface FacilitatorDeps {
  logger: Logger;
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
  run: () => Promise<R>,
  refusedByOutage: (result: R) => boolean,
): Promise<R> {
  const scope = newScope();
  const unavailable = () => new FacilitatorUnavailableError(`settlement chain unreachable during ${step}`);
  const result = await rpcFailures.run(scope, run).catch((err) => {
    throw scope.failed || isTransportError(err) ? unavailable() : err;
  });
  if (scope.failed && refusedByOutage(result)) throw unavailable();
  return result;
}

/** One facilitator verify or settle: whether the node was unreachable, and code read so far. */
interface CallScope {
  failed: boolean;
  /** The exact scheme reads the payer's code twice per verify; once is enough. */
  code: Map<string, Promise<Hex | undefined>>;
}

const newScope = (): CallScope => ({ failed: false, code: new Map() });

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
  const rpc = jsonRpcTransport(cfg.rpcUrl, { timeoutMs: cfg.rpcTimeoutMs });
  const transport = rpc.transport;
  const publicClient = createPublicClient({ chain, transport, pollingInterval: cfg.pollingIntervalMs });
  const account = privateKeyToAccount(cfg.privateKey);
  const wallet: WalletClient = createWalletClient({ account, chain, transport });
  const submitter = new SerialSubmitter(publicClient, account.address, deps.signerLock);

  const signer = toFacilitatorEvmSigner(
    {
      address: account.address,
      readContract: (args) =>
        tracked(() => publicClient.readContract({ ...args, abi: args.abi as Abi, args: args.args ?? [] })),
      verifyTypedData: (args) => tracked(() => publicClient.verifyTypedData(args as never)),
      // A failed getCode must not throw: the exact scheme starts an asset check with it that it
      // may never await (an unhandled rejection). The outage is noted and reported instead.
      getCode: (args) => {
        const memo = rpcFailures.getStore()?.code;
        const key = args.address.toLowerCase();
        const cached = memo?.get(key);
        if (cached) return cached;
        const read = tracked(() => publicClient.getCode(args)).catch(swallowTransportError);
        memo?.set(key, read);
        return read;
      },
      waitForTransactionReceipt: (args) => tracked(() => publicClient.waitForTransactionReceipt(args)),
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

  const client: FacilitatorClient = {
    verify: (payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> =>
      outageAware(
        "verify",
        () => facilitator.verify(payload, requirements),
        (r) => !r.isValid,
      ),
    settle: (payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> =>
      outageAware(
        "settle",
        () => facilitator.settle(payload, requirements),
        // A broadcast transaction (settlement_pending) is reported as is: money may still move.
        (r) => !r.success && !r.transaction,
      ),
    // The facilitator lists the networks it was registered with, all CAIP-2.
    getSupported: async () => facilitator.getSupported() as SupportedResponse,
  };

  const settleVerified = (
    payload: PaymentPayload,
    requirements: PaymentRequirements,
  ): Promise<SettleResponse> =>
    outageAware(
      "settle",
      () =>
        settleVerifiedTransfer(signer, pendingSettlementStore, payload, requirements, () =>
          client.settle(payload, requirements),
        ),
      (r) => !r.success && !r.transaction,
    );

  logger.debug({ address: account.address, network }, "in-process x402 facilitator");
  return { mode: "local", client, address: account.address, settleVerified, close: () => rpc.close() };
}

/** What transferWithAuthorization reverts with, as the exact scheme's refusal codes. */
function transferErrorReason(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
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

/** Seconds a settlement must still have before the authorization expires (the library's margin). */
const VALID_BEFORE_MARGIN_SECONDS = 6;

/**
 * Settles an `exact` EIP-3009 payment that Verify accepted moments ago, with the same payload and
 * requirements (the core proves it from the reservation), without the library's second verification
 * in settle (another getCode and another secp256k1 recovery, pure JS, about 2 ms of CPU a call).
 * Only time can change in between, so it is checked again here. Nothing is given away by skipping
 * the rest: a transfer the token would refuse fails gas estimation and is never broadcast, and a call
 * is answered only after its settlement succeeded. The pending-settlement bookkeeping and the
 * Transfer-event check are the library's. Anything but a plain ECDSA authorization (a smart wallet,
 * ERC-6492), or a payment with a broadcast settlement still pending, goes through the library.
 */
async function settleVerifiedTransfer(
  signer: ReturnType<typeof toFacilitatorEvmSigner>,
  pending: PendingSettlementStore | undefined,
  payload: PaymentPayload,
  requirements: PaymentRequirements,
  viaLibrary: () => Promise<SettleResponse>,
): Promise<SettleResponse> {
  const inner = payload.payload;
  if (requirements.scheme !== "exact" || !isEIP3009Payload(inner as never)) return viaLibrary();
  const { authorization: auth, signature } = inner as unknown as ExactEIP3009Payload;
  if (signature?.length !== 132) return viaLibrary();
  if (pending && (await pending.get(signature))) return viaLibrary();
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
  const asset = getAddress(requirements.asset);
  const { r, s, v, yParity } = parseSignature(signature as Hex);
  let tx: Hex;
  try {
    tx = await signer.writeContract({
      address: asset,
      abi: eip3009ABI,
      functionName: "transferWithAuthorization",
      args: [
        getAddress(auth.from),
        getAddress(auth.to),
        BigInt(auth.value),
        BigInt(auth.validAfter),
        BigInt(auth.validBefore),
        auth.nonce,
        v ?? BigInt(yParity),
        r,
        s,
      ],
    });
  } catch (err) {
    if (isTransportError(err)) throw err;
    return refused(transferErrorReason(err), "", err instanceof Error ? err.message : String(err));
  }
  let receipt: Awaited<ReturnType<typeof signer.waitForTransactionReceipt>>;
  try {
    receipt = await signer.waitForTransactionReceipt({ hash: tx });
  } catch (err) {
    // Broadcast but not seen confirmed: a retry with the same payment awaits this transaction.
    const message = err instanceof Error ? err.message : String(err);
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
  if (receipt.status !== "success") return refused("invalid_exact_evm_transaction_failed", tx);
  const transferred = parseEventLogs({
    abi: erc20Abi,
    eventName: "Transfer",
    logs: (receipt.logs ?? []).filter((log) => isAddressEqual(log.address, asset)),
  }).some(
    (log) =>
      isAddressEqual(log.args.from, auth.from as Hex) &&
      isAddressEqual(log.args.to, auth.to as Hex) &&
      log.args.value === BigInt(auth.value),
  );
  if (!transferred) return refused("invalid_exact_evm_transfer_event_mismatch", tx);
  return { success: true, transaction: tx, network, payer };
}
